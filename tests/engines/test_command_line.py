"""Launch command lines of vLLM, SGLang, TGI and llama.cpp read into typed settings (engines/command_line.py) and
through the doctor. The command lines are copied from public threads (the URL beside each); only the GPU and the
catalog model (which the threads state in words) are passed as options."""

from __future__ import annotations

import shlex
import time

import pytest

from infer_advisor.doctor.diagnosis import diagnose
from infer_advisor.doctor.input_text import log_from_command
from infer_advisor.cli import main
from infer_advisor.engines.command_line import apply_edit, looks_like_command, parse_command
from infer_advisor.errors import RequestError

# https://github.com/huggingface/text-generation-inference/issues/1376 (line continuations joined)
TGI_1376 = ("docker run --gpus '\"device=0,1,2,3\"' --shm-size 1g -p 3000:80 -e HUGGING_FACE_HUB_TOKEN=$TOKEN "
            "-v $volume:/data ghcr.io/huggingface/text-generation-inference:1.3 --model-id $MODEL --sharded true --num-shard 2 "
            "--max-batch-prefill-tokens 512 --max-batch-total-tokens 1024 --max-input-length 4095 --max-total-tokens 4096")
# https://github.com/huggingface/text-generation-inference/issues/1197
TGI_1197 = ("docker run --pull always --gpus all -d --shm-size 1g -p 8080:80 -v ./data:/data ghcr.io/huggingface/text-generation-inference:1.1.0 "
            "--max-total-tokens 8192 --max-batch-prefill-tokens 5000 --max-input-length 5000 --model-id "
            "flozi00/Mistral-7B-german-assistant-v4-4bit-autogptq --quantize=gptq --cuda-memory-fraction 0.8")
# https://github.com/huggingface/text-generation-inference/issues/2301 (benchmarks/published/startup_failures.yaml sf44; the
# thread gives the image and its arguments, `docker run --gpus all` is added here)
TGI_2301 = ("docker run --gpus all ghcr.io/huggingface/text-generation-inference:2.2.0 --model-id meta-llama/Meta-Llama-3.1-70B-Instruct "
            "--max-input-length 131072 --max-total-tokens 139264 --max-stop-sequences 6 --num-shard 4 --sharded true")
# https://github.com/sgl-project/sglang/issues/4895
SGLANG_4895 = ("python3 -m sglang.launch_server --model-path  /llm/model/google/gemma-3-27b-it-int4-awq/ --host 0.0.0.0 --port 30000 "
               "--trust-remote-code --context-length 4096")
# https://github.com/zai-org/GLM-4.5/issues/3 (line continuations as pasted)
SGLANG_GLM = ("python3 -m sglang.launch_server \\\n  --model-path zai-org/GLM-4.5-Air-FP8 \\\n  --tp-size 4 \\\n  --tool-call-parser glm45  \\\n"
              "  --speculative-algorithm EAGLE \\\n  --mem-fraction-static 0.7 \\\n  --host 0.0.0.0 \\\n  --port 8000")
# https://github.com/ggml-org/llama.cpp/issues/13085 (`-fa` without a value: builds before the on/off/auto form)
LLAMA_13085 = ("/models/llama.cpp/llama-server -m /models/Mistral-Small-3.1-24B-Instruct-2503-Q8_0.gguf -md /models/Mistral-Small-3.1-DRAFT-0.5B.Q8_0.gguf "
               "-fa -sm row --no-mmap -ngl 99 -ngld 99 --port 9009 -c 65536 --draft-max 16 --draft-min 5 --draft-p-min 0.5 "
               "--device CUDA2,CUDA1 --device-draft CUDA1 --tensor-split 0,1,1 --slots --metrics --numa distribute -t 40 --no-warmup")
# https://github.com/ggml-org/llama.cpp/pull/26297 (a comment's command, Windows path as a POSIX shell reads it)
LLAMA_26297 = ("llama-server -m C:\\models\\IQ4_XS\\MiniMax-M3-IQ4_XS-00001-of-00006.gguf -c 50000 --parallel 1 --flash-attn on -ngl 99 "
               "--fit off --tensor-split 11,11,10 -sm layer -ub 2048 -b 2048 --cache-type-k q8_0 --cache-type-v q8_0")


def test_tgi_docker_commands_read_the_image_arguments_and_environment():
    cmd = parse_command(TGI_1376)
    assert cmd.engine == "tgi" and cmd.image_version == "1.3"
    assert cmd.settings == {"model": "$MODEL", "tp": 2, "max_num_batched_tokens": 512, "max_batch_total_tokens": 1024,
                            "max_input_tokens": 4095, "max_model_len": 4096}
    cmd = parse_command(TGI_1197)
    assert cmd.settings["memory_fraction"] == 0.8 and cmd.settings["quantization"] == "gptq" and cmd.settings["max_model_len"] == 8192
    log, extras = log_from_command(TGI_1197)
    assert log.gpu_memory_utilization == pytest.approx(0.72)  # 0.8 x TGI_WIGGLE_ROOM 0.90
    assert extras == {"max-input-tokens": 5000}
    env = parse_command("docker run -e MAX_TOTAL_TOKENS=4096 --env CUDA_MEMORY_FRACTION=0.5 -e MODEL_ID=m ghcr.io/huggingface/text-generation-inference:3.3.6")
    assert env.settings == {"max_model_len": 4096, "memory_fraction": 0.5, "model": "m"} and env.given["max_model_len"] == "MAX_TOTAL_TOKENS"


def test_tgi_before_2_4_1_warms_up_with_the_whole_input():
    log, extras = log_from_command(TGI_2301)
    assert log.engine_version == "2.2.0" and log.max_num_batched_tokens == 131072 + 50 and log.tp == 4
    later, _ = log_from_command(TGI_2301.replace(":2.2.0", ":3.3.6"))
    assert later.max_num_batched_tokens is None  # 4096 or compute_optimal: the engine profile's default


def test_sglang_commands_with_abbreviations_and_continuations():
    cmd = parse_command(SGLANG_4895)
    assert cmd.engine == "sglang" and cmd.settings == {"model": "/llm/model/google/gemma-3-27b-it-int4-awq/", "max_model_len": 4096}
    glm = parse_command(SGLANG_GLM)
    assert glm.settings == {"model": "zai-org/GLM-4.5-Air-FP8", "tp": 4, "memory_fraction": 0.7}
    assert parse_command("sglang serve --model-path m --tp 2").settings["tp"] == 2  # argparse prefix of --tp-size
    fixed = shlex.split(apply_edit(glm, ["--mem-fraction-static", "0.85"]))
    assert fixed.count("--mem-fraction-static") == 1 and fixed[-2:] == ["--mem-fraction-static", "0.85"]


def test_llama_server_commands():
    cmd = parse_command(LLAMA_13085)
    assert cmd.engine == "llama.cpp"
    assert cmd.settings == {"model": "/models/Mistral-Small-3.1-24B-Instruct-2503-Q8_0.gguf", "flash_attn": "on", "gpu_layers": "99",
                            "max_model_len": 65536, "split_mode": "row"}  # -sm row (docfix13: read so an edit replaces it)
    log, extras = log_from_command(LLAMA_13085)
    assert log.quantization == "gguf-q8_0" and log.max_model_len == 65536 and log.max_num_seqs == 1  # -np auto: one unified pool
    cmd = parse_command(LLAMA_26297)
    assert cmd.settings["kv_cache_dtype"] == cmd.settings["kv_cache_dtype_v"] == "q8_0" and cmd.settings["max_num_seqs"] == 1
    log, extras = log_from_command(LLAMA_26297)
    assert log.kv_cache_dtype == "fp8" and log.max_model_len == 50176  # GGML_PAD(50000, 256), as the thread's n_ctx_slot = 50176
    slots, extras = log_from_command("llama-server -m m-f16.gguf -c 8192 -np 4 -ngl 99")
    assert (slots.max_model_len, slots.max_num_seqs, extras) == (2048, 4, {"ctx-slots": 4, "gpu-layers": 99})
    assert apply_edit(parse_command("llama-server -m m.gguf -c 8192 -ngl 99"), ["--ctx-size", "4096"]) == "llama-server -m m.gguf -ngl 99 --ctx-size 4096"


def test_vllm_image_tag_and_auto_context():
    cmd = parse_command("docker run --gpus all vllm/vllm-openai:v0.6.4 --model meta-llama/Llama-3.1-8B --max-model-len 16k")
    assert (cmd.engine, cmd.image_version, cmd.settings) == ("vllm", "0.6.4", {"model": "meta-llama/Llama-3.1-8B", "max_model_len": 16000})
    tags = {"ghcr.io/ggml-org/llama.cpp:server-cuda-b7200": "b7200", "ghcr.io/ggml-org/llama.cpp:server-cuda": None,
            "ghcr.io/huggingface/text-generation-inference:3.3.6-rocm": "3.3.6", "ghcr.io/huggingface/text-generation-inference:latest": None}
    for image, version in tags.items():
        assert parse_command(f"docker run --gpus all {image} -m m.gguf --model-id m").image_version == version, image
    log, extras = log_from_command("vllm serve meta-llama/Llama-3.1-8B --max-model-len auto")
    assert log.max_model_len is None and extras["context-from-memory"]
    d = diagnose("vllm serve meta-llama/Llama-3.1-8B --max-model-len auto", gpu="L4", engine_version="0.33.0")
    assert d.starts is True and any(n.startswith("--max-model-len auto") for n in d.notes)
    assert diagnose("vllm serve meta-llama/Llama-3.1-8B", gpu="L4", engine_version="0.33.0").starts is False  # 131,072 by default


def test_a_shell_payload_is_the_command():
    cmd = "/bin/sh -c 'vllm serve meta-llama/Llama-3.1-8B --max-model-len 4096 --gpu-memory-utilization 0.9'"
    assert looks_like_command(cmd)
    read = parse_command(cmd)
    assert read.engine == "vllm" and read.settings == {"model": "meta-llama/Llama-3.1-8B", "max_model_len": 4096, "memory_fraction": 0.9}


def test_commands_and_logs_are_told_apart():
    for text in (TGI_1376, TGI_1197, SGLANG_4895, SGLANG_GLM, LLAMA_13085, "vllm serve m", "CUDA_VISIBLE_DEVICES=0 llama-server -m x.gguf"):
        assert looks_like_command(text), text
    assert not looks_like_command("INFO 01-01 vllm serve started\nINFO second line")
    assert not looks_like_command("docker run ubuntu:22.04 echo llama")


def test_llama_cpp_command_predicts_the_kv_buffer_failure_and_the_context_that_fits():
    """T4 (15 GiB usable): Llama-3.1-8B Q4_K_M weights 4.5 GiB; 131,072 cells x 128 KiB = 16 GiB of f16 KV cannot be
    allocated; the longest -c that fits is what the edit says, and the fixed command starts by the same model."""
    cmd = "llama-server -m /models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf -c 131072 -ngl 99"
    d = diagnose(cmd, gpu="T4", model="meta-llama/Llama-3.1-8B")
    assert d.engine == "llama.cpp" and d.starts is False and d.error.kind == "llamacpp_alloc_failed" and "failed to allocate buffer for kv cache" in d.error.line
    # q8_0 KV (8.5 GiB) fits beside the weights and costs less than losing context: ranked first
    assert d.edits[0].starts and d.edits[0].argv == ["--cache-type-k", "q8_0", "--cache-type-v", "q8_0"]
    context = next(e for e in d.edits if e.argv[0] == "--ctx-size")
    assert context.starts and 32768 <= int(context.argv[1]) < 131072
    again = diagnose(d.fixed_command, gpu="T4", model="meta-llama/Llama-3.1-8B")
    assert again.starts is True and shlex.split(d.fixed_command)[-4:] == d.edits[0].argv
    shorter = diagnose(apply_edit(parse_command(cmd), context.argv), gpu="T4", model="meta-llama/Llama-3.1-8B")
    assert shorter.starts is True and not any("--fit" in n for n in d.notes + shorter.notes)  # -ngl and -c given: --fit changes nothing
    unset = diagnose(cmd.replace(" -ngl 99", ""), gpu="T4", model="meta-llama/Llama-3.1-8B")
    assert unset.starts is False and any(n.startswith("-ngl not given: builds with --fit") for n in unset.notes)
    assert not any("--fit" in n for n in diagnose(cmd.replace(" -ngl 99", " --fit off"), gpu="T4", model="meta-llama/Llama-3.1-8B").notes)


def test_tgi_command_refused_max_total_tokens_and_try_flags():
    """L4 (22.1 GiB): Llama-3.1-8B's 15 GiB of weights leave about 2.8 GiB of KV under 0.90 x the total: 131,072 tokens
    are refused in the router's words; the shorter --max-total-tokens keeps --max-input-tokens below it."""
    cmd = ("docker run --gpus all ghcr.io/huggingface/text-generation-inference:3.3.6 --model-id meta-llama/Llama-3.1-8B "
           "--max-total-tokens 131072 --max-input-tokens 130000")
    d = diagnose(cmd, gpu="L4", try_flags=["--max-total-tokens", "16384", "--max-input-tokens", "16000"])
    assert d.starts is False and d.error.line == "Not enough memory to handle `max_total_tokens=131072`"
    context = next(e for e in d.edits if e.argv[0] == "--max-total-tokens")
    length = int(context.argv[1])
    assert context.starts and context.argv[2:] == ["--max-input-tokens", str(length - 1)]
    assert d.tried is not None and d.tried.starts and d.tried.max_model_len == 16384
    assert all(e.argv[0] != "--max-concurrent-requests" for e in d.edits)
    free = diagnose(cmd.replace(" --max-total-tokens 131072 --max-input-tokens 130000", ""), gpu="L4")
    assert free.starts is True and any("sizes" in n or "any KV pool starts" in n for n in free.notes)


def test_sglang_try_flags_in_its_own_flags():
    cmd = "python -m sglang.launch_server --model-path meta-llama/Llama-3.1-8B --mem-fraction-static 0.7 --context-length 8192"
    d = diagnose(cmd, gpu="L4", try_flags=["--mem-fraction-static=0.75"])
    assert d.starts is False and d.tried is not None and d.tried.argv == ["--mem-fraction-static", "0.75"] and d.tried.kv_cache_tokens > 0
    with pytest.raises(RequestError, match="not a sglang flag the ledger reads"):
        diagnose(cmd, gpu="L4", try_flags=["--gpu-memory-utilization", "0.9"])


@pytest.mark.parametrize("argv, words", [
    (["doctor", "llama-server -c 4096"], "names no model"),
    (["doctor", "llama-server -m m.gguf -c lots"], "-c 'lots' is not an integer"),
    (["doctor", "docker run ghcr.io/huggingface/text-generation-inference:3.3.6 --max-total-tokens 4096"], "names no model (--model-id)"),
    (["doctor", "docker run ghcr.io/huggingface/text-generation-inference:3.3.6 --model-id m --cuda-memory-fraction"], "needs a value"),
    (["doctor", "python -m sglang.launch_server --model-path 'm"], "check its quotes"),
    (["doctor", "llama-server -m m.gguf -fa maybe --ctx-size 10", "--gpu", "T4"], "-fa 'maybe' is not on, off or auto"),
    (["doctor", "llama-server -m m.gguf -c 4096", "--gpu", "T4", "--try-flags", "--max-model-len 10"], "not a llama.cpp flag"),
])
def test_bad_command_lines_are_one_line_and_exit_2(argv, words, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert words in err and len(err.splitlines()) == 1


def test_cli_json_for_a_command_carries_what_was_read(capsys):
    import json

    from infer_advisor.doctor.diagnosis import Diagnosis

    code = main(["doctor", TGI_2301, "--gpu", "H100-80GB", "--model", "meta-llama/Llama-3.1-70B", "--json"])
    d = Diagnosis.model_validate(json.loads(capsys.readouterr().out))
    assert code == 0 and d.input_kind == "command" and d.engine == "tgi"
    assert (d.engine_version, d.version_source) == ("2.2.0", "the container image's tag")
    assert d.command_settings == {"model": "meta-llama/Meta-Llama-3.1-70B-Instruct", "max_input_tokens": 131072, "max_model_len": 139264,
                                  "tp": 4, "image_version": "2.2.0"}
    assert "command_settings" in Diagnosis.model_json_schema()["properties"]


def test_hostile_values_do_not_reach_the_terminal_raw(capsys):
    main(["doctor", "llama-server -m 'evil\x1b[31m\u202e.gguf' -c 4096", "--gpu", "T4"])
    out = capsys.readouterr()
    assert "\x1b[31m" not in out.out + out.err and "\u202e" not in out.out + out.err


@pytest.mark.parametrize("value", [v for v in __import__("tests.probe.hostile", fromlist=["ALL"]).ALL if "\x00" not in v])
def test_hostile_values_in_a_command_stay_in_their_slot(value, capsys):
    """The shared hostile corpus as the GGUF path of a failing llama-server command: the terminal shows it escaped
    (no raw control, no rich markup applied) and the fixed command gives it back as one shell word."""
    path = value + "-Q4_K_M.gguf"
    cmd = shlex.join(["llama-server", "-m", path, "-c", "131072", "-ngl", "99"])
    d = diagnose(cmd, gpu="T4", model="meta-llama/Llama-3.1-8B")
    assert d.fixed_command and shlex.split(d.fixed_command)[:3] == ["llama-server", "-m", path]
    main(["doctor", cmd, "--gpu", "T4", "--model", "meta-llama/Llama-3.1-8B"])
    out = capsys.readouterr().out
    from tests.probe.hostile import FORMAT_CONTROLS, LINE_BREAKS

    raw = [c for c in FORMAT_CONTROLS + LINE_BREAKS if c not in ("\n", "\r\n") and c in value]
    assert not any(c in out for c in raw)
    if value.startswith("[bold red]"):
        assert "[bold red]" in out  # shown as text, not applied as markup


def test_each_engine_answers_under_a_second():
    for cmd, kw in ((TGI_2301, {"gpu": "H100-80GB", "model": "meta-llama/Llama-3.1-70B"}),
                    ("llama-server -m x-Q4_K_M.gguf -c 131072", {"gpu": "T4", "model": "meta-llama/Llama-3.1-8B"}),
                    (SGLANG_GLM.replace("zai-org/GLM-4.5-Air-FP8", "meta-llama/Llama-3.1-8B"), {"gpu": "H100-80GB"})):
        diagnose(cmd, **kw)  # warm caches
        start = time.process_time()
        diagnose(cmd, **kw)
        assert time.process_time() - start < 1.0
