"""Everything an engine means, in one place (data in ``data/engines.yaml``, ``engine_memory.yaml``,
``speculative.yaml``, ``triton.yaml``, ``emit.yaml``):

- ``profiles``: the engine catalog (image, port, formats, defaults) -> :class:`EngineProfile`;
- ``memory``: how each engine version budgets GPU memory (``EngineMemoryProfile``, settings by version);
- ``speculative``: speculative-decoding heads per engine;
- ``speed_terms``: an engine's step terms and coefficients by version (``data/speed/engines.yaml`` ``engines:``,
  loaded with the fitted overlay by ``estimate/speed_data.py``);
- ``triton``: Triton Inference Server releases and their TensorRT-LLM backend;
- ``launch_facts``: commands, images and pinned packages to start each engine (``data/emit.yaml``);
- ``argv``: one flag builder per engine; ``prepare``: conversion steps (MLC LLM, ExLlamaV2);
  ``triton_launch``: Triton's model repository and ``tritonserver`` command; ``launch``: picks between them.

The package imports nothing above ``model_facts`` and ``hardware`` at run time (tests/test_import_graph.py); the
command builders read a plan passed to them. Import the submodule you need: this ``__init__`` stays empty so that
reading one engine fact loads only its module.
"""
