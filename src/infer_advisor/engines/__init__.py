"""Everything an engine means, in one place (data in ``data/engines.yaml``, ``engine_memory.yaml``,
``speculative.yaml``, ``triton.yaml``, ``emit.yaml``):

- ``profiles``: the engine catalog (image, port, formats, defaults) -> :class:`EngineProfile`;
- ``memory``: how each engine version budgets GPU memory (``EngineMemoryProfile``, settings by version);
- ``speculative``: speculative-decoding heads per engine; ``draft_shape``: what a ``--speculative-config`` adds (draft
  layers in the KV pool, draft weights, state pages) as vLLM holds it;
- ``speed_terms``: an engine's step terms and coefficients by version (``data/speed/engines.yaml`` ``engines:``,
  loaded with the fitted overlay by ``estimate/speed_data.py``);
- ``triton``: Triton Inference Server releases and their TensorRT-LLM backend;
- ``stacks``: the server a ``--stack`` puts in front of an engine (what the plan's engine configuration becomes);
- ``front_server``: what the artifacts need from that server, and the files an engine or its server reads at start;
- ``startup_log``: the memory lines each engine prints at start-up (vLLM V0/V1, SGLang, llama.cpp), parsed;
- ``launch_facts``: commands, images and pinned packages to start each engine (``data/emit.yaml``);
- ``argv``: one flag builder per engine; ``prepare``: conversion steps (MLC LLM, ExLlamaV2);
  ``triton_launch``: Triton's model repository and ``tritonserver`` command; ``launch``: picks between them.

The package imports nothing above ``model_facts`` and ``hardware`` at run time (tests/test_import_graph.py); the
command builders read a plan passed to them. Import the submodule you need: this ``__init__`` stays empty so that
reading one engine fact loads only its module.
"""
