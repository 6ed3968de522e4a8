"""The published failing start-ups (benchmarks/published/startup_failures.yaml): schema, held-out rule, catalog links."""

from __future__ import annotations

import re

import pytest
import yaml

from benchmarks.published.startup_failures import DATA_FILE, load_failures


def test_file_loads_with_thirty_failures_and_a_held_out_third():
    data = load_failures()
    assert len(data.failures) >= 30
    held = data.held_out()
    assert [f.id for f in held] == [f.id for f in data.failures if int(f.id[2:]) % 3 == 0]
    assert len(held) >= len(data.failures) // 3
    assert {f.engine for f in data.failures} >= {"vllm", "sglang", "tgi", "llama.cpp"}


def test_held_out_flag_must_follow_the_rule(tmp_path):
    raw = yaml.safe_load(DATA_FILE.read_text())
    raw["failures"][0]["held_out"] = True  # sf01 is not a multiple of 3
    bad = tmp_path / "f.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="held_out must be False"):
        load_failures(bad)


def test_unknown_keys_are_refused(tmp_path):
    raw = yaml.safe_load(DATA_FILE.read_text())
    raw["failures"][1]["gpu_name"] = "A100"
    bad = tmp_path / "f.yaml"
    bad.write_text(yaml.safe_dump(raw))
    with pytest.raises(ValueError, match="sf02"):
        load_failures(bad)


def test_error_lines_are_quoted_or_placed():
    for f in load_failures().failures:
        in_log = re.sub(r"\s+", " ", f.error_line)[:30] in re.sub(r"\s+", " ", f.log)
        assert in_log or f.error_line_where, f.id


def test_catalog_names_exist():
    from infer_advisor.hardware.catalog import catalog
    from infer_advisor.model_facts.catalog import catalog_names

    gpus = {g.name for g in catalog().gpus}
    models = set(catalog_names())
    for f in load_failures().failures:
        assert f.gpu is None or f.gpu in gpus, (f.id, f.gpu)
        assert f.catalog_model is None or f.catalog_model in models, (f.id, f.catalog_model)


def test_printed_kv_tokens_follow_from_blocks():
    """Where the log prints '# GPU blocks: N' and the error's token figure, tokens = 16 x blocks (vLLM's default block)."""
    for f in load_failures().failures:
        if "kv_blocks" in f.figures and "kv_cache_tokens" in f.figures:
            assert f.figures["kv_cache_tokens"] == 16 * f.figures["kv_blocks"], f.id


def _new_batch(batch: int, numbers: range) -> list:
    """A batch's entries after the checks every gathered batch shares: its ids in order, no thread of an earlier entry
    and none twice, every stated GPU count covering the GPUs the run used, every confirmed fix quoting the thread."""
    failures = load_failures().failures
    new = [f for f in failures if f.batch == batch]
    assert [f.id for f in new] == [f"sf{n}" for n in numbers]
    earlier = {f.url for f in failures if f.batch < batch}
    assert not earlier & {f.url for f in new}
    assert len({f.url for f in new}) == len(new)
    for f in new:
        if f.gpus_present and f.gpu_count:
            assert f.gpus_present.count >= f.gpu_count, f.id
        if f.fix and f.fix.confirmed:
            assert len(f.fix.quote) >= 8, f.id
    return new


def _ref(url: str) -> str:
    return re.sub(r"https://github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull)/(\d+)", r"\1#\2", url)


def _in_earlier(ref: str, earlier: str, as_ref: bool = False) -> bool:
    """``repo#N`` is an earlier entry's thread: its URL (issues, pull or discussions) is in ``earlier``, or, with
    ``as_ref``, the ``repo#N`` form itself."""
    repo, number = ref.split("#")
    return bool(re.search(rf"{re.escape(repo)}/(issues|pull|discussions)/{number}(?!\d)", earlier)
                or as_ref and re.search(rf"{re.escape(ref)}(?!\d)", earlier))


def _candidates_audited(batch: list, heading: str, min_refs: int, earlier_candidates: tuple[str, ...] = (),
                        new_by_ref: bool = True, used_as_ref: bool = False) -> None:
    """A selective batch's candidates file (startup_failures_batch<N>_candidates.md): at least ``min_refs`` threads
    looked at and not taken, none of them a taken one; no taken thread rejected (nor used) in ``earlier_candidates``;
    with ``new_by_ref`` no taken thread's URL nor repo#N in an entry before ``heading``; every thread marked 'used' is an
    earlier entry's (its URL, or with ``used_as_ref`` its repo#N too)."""
    folder = DATA_FILE.parent
    number = batch[0].batch
    listed = {line for line in folder.joinpath(f"startup_failures_batch{number}_candidates.md").read_text(encoding="utf-8")
              .splitlines() if line.startswith("- ")}
    refs = {ref for line in listed for ref in re.findall(r"[\w.-]+/[\w.-]+#\d+", line.split("|")[0])}
    assert len(refs) >= min_refs
    taken = {_ref(f.url) for f in batch}
    assert not taken & refs
    for name in earlier_candidates:
        earlier_rejects = folder.joinpath(name).read_text(encoding="utf-8")
        for ref in taken:
            assert not re.search(rf"{re.escape(ref)}(?!\d)", earlier_rejects), (name, ref)
    earlier = DATA_FILE.read_text(encoding="utf-8").split(heading)[0]
    if new_by_ref:
        for ref in taken:
            assert not _in_earlier(ref, earlier, as_ref=True), ref
    for line in listed:
        if line.rstrip().endswith("| used"):
            for ref in re.findall(r"[\w.-]+/[\w.-]+#\d+", line.split("|")[0]):
                assert _in_earlier(ref, earlier, as_ref=used_as_ref), ref


def test_batch10_threads_are_new_and_state_what_they_claim():
    """Batch 10 (sf167-sf196), gathered before docfix11's doctor ran on it: no thread of an earlier entry, every stated
    GPU count covers the GPUs the run used, and every confirmed fix quotes the thread."""
    b10 = _new_batch(10, range(167, 197))
    assert {f.engine for f in b10} == {"vllm", "sglang", "tgi", "llama.cpp"}


def test_batch11_threads_are_new_and_state_what_they_claim():
    """Batch 11 (sf197-sf225), gathered before docfix12's doctor ran on it: no thread of an earlier entry, every stated
    GPU count covers the GPUs the run used, every confirmed fix quotes the thread; as many SGLang threads as batch 10 (3)
    and more TGI and llama.cpp ones (batch 10 had 1 and 2)."""
    b11 = _new_batch(11, range(197, 226))
    engines = [f.engine for f in b11]
    assert (engines.count("sglang"), engines.count("tgi"), engines.count("llama.cpp")) == (3, 3, 13)


def test_batch12_threads_are_new_and_state_what_they_claim():
    """Batch 12 (sf226-sf240), gathered before docfix14's doctor ran on it: no thread of an earlier entry, every stated
    GPU count covers the GPUs the run used, every confirmed fix quotes the thread, the held-out third follows the rule;
    no SGLang or TGI thread the searches returned was new with an engine error line, so the batch is vLLM and llama.cpp."""
    b12 = _new_batch(12, range(226, 241))
    engines = [f.engine for f in b12]
    assert (engines.count("vllm"), engines.count("llama.cpp")) == (8, 7)
    assert [f.id for f in b12 if f.held_out] == ["sf228", "sf231", "sf234", "sf237", "sf240"]


def test_batch13_threads_are_new_and_state_what_they_claim():
    """Batch 13 (sf241-sf267), gathered before docfix15's doctor ran on it: no thread of an earlier entry, every stated
    GPU count covers the GPUs the run used, every confirmed fix quotes the thread, the held-out third follows the rule;
    all four engines: vLLM V1 and V0 (five of them vLLM's own CI on 22 GiB cards, two ROCm forks), SGLang, TGI (one
    ROCm thread; every other TGI thread the searches returned was used) and llama.cpp (all ollama)."""
    b13 = _new_batch(13, range(241, 268))
    engines = [f.engine for f in b13]
    assert (engines.count("vllm"), engines.count("sglang"), engines.count("tgi"), engines.count("llama.cpp")) == (11, 3, 1, 12)
    assert [f.id for f in b13 if f.held_out] == ["sf243", "sf246", "sf249", "sf252", "sf255", "sf258", "sf261", "sf264",
                                                  "sf267"]
    assert {f.id for f in b13 if f.fix and f.fix.confirmed} == {"sf241", "sf242", "sf254"}


def test_batch14_threads_are_new_and_state_what_they_claim():
    """Batch 14 (sf268-sf287), gathered before docfix16's doctor ran on it: no thread of an earlier entry, every stated
    GPU count covers the GPUs the run used, every confirmed fix quotes the thread, the held-out third follows the rule;
    all four engines: vLLM V0 and V1 (one vllm-ascend thread, two in other projects' trackers), SGLang, TGI and
    llama.cpp (two ollama threads, one of them in Open WebUI's tracker)."""
    b14 = _new_batch(14, range(268, 288))
    engines = [f.engine for f in b14]
    assert (engines.count("vllm"), engines.count("sglang"), engines.count("tgi"), engines.count("llama.cpp")) == (13, 2, 1, 4)
    assert [f.id for f in b14 if f.held_out] == ["sf270", "sf273", "sf276", "sf279", "sf282", "sf285"]
    assert {f.id for f in b14 if f.fix and f.fix.confirmed} == {"sf268", "sf272", "sf273", "sf283"}


def test_batch15_threads_are_new_and_state_what_they_claim():
    """Batch 15 (sf288-sf303), gathered before docfix17's doctor ran on it: no thread of an earlier entry, every stated
    GPU count covers the GPUs the run used, every confirmed fix quotes the thread, the held-out third follows the rule;
    all four engines: vLLM V0 and V1 (two vllm-omni threads, one in GPTQModel's tracker), SGLang, TGI and llama.cpp
    (four ollama threads, one inference snap, one llama-cpp-python inside khoj)."""
    b15 = _new_batch(15, range(288, 304))
    engines = [f.engine for f in b15]
    assert (engines.count("vllm"), engines.count("sglang"), engines.count("tgi"), engines.count("llama.cpp")) == (6, 1, 1, 8)
    assert [f.id for f in b15 if f.held_out] == ["sf288", "sf291", "sf294", "sf297", "sf300", "sf303"]
    assert {f.id for f in b15 if f.fix and f.fix.confirmed} == {"sf288", "sf289", "sf290", "sf301"}


def test_batch16_threads_are_new_state_what_they_claim_and_can_decide():
    """Batch 16 (sf304-sf320), gathered before docfix18's doctor ran on it, selected by a rule written before any doctor
    run (the data file's batch-16 comment and startup_failures_batch16_candidates.md): every entry either states what
    made it start (a confirmed fix) or prints the figures that decide an edit (V0's KV capacity, V1's free and total
    memory). Also: no thread of an earlier entry, the held-out third by the rule, and the candidates file lists every
    thread looked at and not taken, none of them a taken one, and each one marked 'used' is a URL of an earlier entry."""
    b16 = _new_batch(16, range(304, 321))
    engines = [f.engine for f in b16]
    assert (engines.count("vllm"), engines.count("sglang"), engines.count("tgi"), engines.count("llama.cpp")) == (16, 0, 1, 0)
    assert [f.id for f in b16 if f.held_out] == ["sf306", "sf309", "sf312", "sf315", "sf318"]
    assert {f.id for f in b16 if f.fix and f.fix.confirmed} == {"sf305", "sf306", "sf307", "sf310", "sf311", "sf316", "sf317"}
    for f in b16:  # the selection rule: (a) a confirmed fix, or (b) figures that decide the check the error names
        printed = (f.error == "max_len_exceeds_kv" and f.figures.get("kv_cache_tokens", 0) > 0) or (
            f.error == "free_memory_below_utilization" and {"free_memory_gib", "total_gpu_memory_gib"} <= f.figures.keys())
        assert (f.fix and f.fix.confirmed) or printed, f.id
        if f.error == "max_len_exceeds_kv" and "kv_cache_tokens" in f.figures:  # the figure is the error's own number
            assert f"({f.figures['kv_cache_tokens']:.0f})" in f.error_line, f.id
        if f.error == "free_memory_below_utilization":
            assert f"({f.figures['free_memory_gib']:g}/{f.figures['total_gpu_memory_gib']:g}" in f.error_line, f.id
    _candidates_audited(b16, "Batch 16 (sf304-sf320)", 250, new_by_ref=False)


def test_batch17_threads_are_new_state_what_they_claim_and_can_decide():
    """Batch 17 (sf321-sf332), gathered before docfix19's doctor ran on it, selected by batch 16's rule written before
    any doctor run (the data file's batch-17 comment and startup_failures_batch17_candidates.md): every entry either
    states what made it start (a confirmed fix) or prints the figures that decide an edit (V0's KV capacity; llama.cpp
    buffers against the Metal working set or buffer maximum; ollama's required/available memory). Also: no thread of an
    earlier entry nor one rejected in batch 16, the held-out third by the rule, diversity away from batch 16's V0
    capacity entries, and the candidates file lists every thread looked at and not taken, none of them a taken one,
    and each one marked 'used' is a URL of an earlier entry."""
    b17 = _new_batch(17, range(321, 333))
    engines = [f.engine for f in b17]
    assert (engines.count("vllm"), engines.count("sglang"), engines.count("tgi"), engines.count("llama.cpp")) == (3, 1, 1, 7)
    assert [f.id for f in b17 if f.held_out] == ["sf321", "sf324", "sf327", "sf330"]
    assert {f.id for f in b17 if f.fix and f.fix.confirmed} == {"sf321", "sf325", "sf326", "sf327", "sf328", "sf331", "sf332"}
    assert [f.id for f in b17 if f.error == "max_len_exceeds_kv"] == ["sf325"]  # batch 16 had 11 of 17
    for f in b17:  # the selection rule: (a) a confirmed fix, or (b) figures that decide the check the error names
        fig = f.figures
        printed = (
            (f.error == "max_len_exceeds_kv" and fig.get("kv_cache_tokens", 0) > 0)
            or {"host_required_gib", "host_available_gib"} <= fig.keys()
            or {"weights_buffer_bytes", "buffer_max_bytes"} <= fig.keys()
            or ("metal_working_set_mb" in fig or "metal_working_set_mib" in fig) and "kv_cache_mib" in fig
        )
        assert (f.fix and f.fix.confirmed) or printed, f.id
        if "host_required_gib" in fig:  # ollama's pair is the error's own numbers
            assert f"({fig['host_required_gib']:.1f} GiB) than is available ({fig['host_available_gib']:.1f} GiB)" in f.error_line, f.id
        if f.error == "max_len_exceeds_kv":
            assert f"({fig['kv_cache_tokens']:.0f})" in f.error_line, f.id
        if "buffer_max_bytes" in fig:
            assert f"{fig['weights_buffer_bytes']:.0f} is larger than buffer maximum of {fig['buffer_max_bytes']:.0f}" in f.error_line, f.id
    _candidates_audited(b17, "Batch 17 (sf321-sf332)", 350, ("startup_failures_batch16_candidates.md",))


def test_batch18_threads_are_new_state_what_they_claim_and_can_decide():
    """Batch 18 (sf333-sf337), gathered before docfix20's doctor ran on it, selected by batches 16-17's rule written
    before any doctor run (the data file's batch-18 comment and startup_failures_batch18_candidates.md): every entry
    states what made it start (a confirmed fix quoting the thread) or prints the deciding figures (sf333 also prints
    V0's KV capacity). Also: no thread of an earlier entry nor one listed in the batch-16 or batch-17 candidates files,
    the held-out third by the rule, and the candidates file lists every thread looked at and not taken, none of them a
    taken one, each one marked 'used' being a thread of an earlier entry."""
    b18 = _new_batch(18, range(333, 338))
    engines = [f.engine for f in b18]
    assert (engines.count("vllm"), engines.count("llama.cpp")) == (2, 3)
    assert [f.id for f in b18 if f.held_out] == ["sf333", "sf336"]
    assert {f.id for f in b18 if f.fix and f.fix.confirmed} == {"sf333", "sf334", "sf335", "sf336", "sf337"}
    for f in b18:  # the selection rule (a): the confirmed fix's quote is the thread's words, among the log or the notes
        assert f.fix.quote in f.log or f.fix.quote in (f.notes or "") or f.fix.quote in f.url, f.id
    sf333 = next(f for f in b18 if f.id == "sf333")  # rule (b) as well: V0's printed capacity
    assert f"({sf333.figures['kv_cache_tokens']:.0f})" in sf333.error_line
    sf335 = next(f for f in b18 if f.id == "sf335")  # the failed ROCm0 buffer is the log's own number
    assert f"{sf335.figures['compute_buffer_bytes']:.0f}" in sf335.log
    _candidates_audited(b18, "Batch 18 (sf333-sf337)", 250, ("startup_failures_batch16_candidates.md",
                        "startup_failures_batch17_candidates.md"), used_as_ref=True)


def test_batch19_threads_are_new_state_what_they_claim_and_can_decide():
    """Batch 19 (sf338-sf347), gathered before docfix21's doctor ran on it, selected by batches 16-18's rule written
    before any doctor run (the data file's batch-19 comment and startup_failures_batch19_candidates.md): every entry
    states what made it start (a confirmed fix quoting the thread, among the log lines or notes) or prints the deciding
    figures (sf339: V0's KV capacity in its error line; sf346: ollama's offload line with the available and required
    memory; sf347: llama.cpp's projected device use against the free device memory). Also: no thread of an earlier entry nor one listed in the batch 16-18 candidates files, the held-out third
    by the rule, and the candidates file lists every thread looked at and not taken, none of them a taken one, each one
    marked 'used' being a thread of an earlier entry."""
    b19 = _new_batch(19, range(338, 348))
    engines = [f.engine for f in b19]
    assert (engines.count("vllm"), engines.count("sglang"), engines.count("llama.cpp")) == (2, 1, 7)
    assert [f.id for f in b19 if f.held_out] == ["sf339", "sf342", "sf345"]
    confirmed = {f.id for f in b19 if f.fix and f.fix.confirmed}
    assert confirmed == {"sf338", "sf340", "sf341", "sf342", "sf343", "sf344", "sf345"}
    for f in b19:
        if f.id in confirmed:  # rule (a): the quote is the thread's words, among the log lines or the notes
            assert f.fix.quote in f.log or f.fix.quote in (f.notes or ""), f.id
        else:  # rule (b): the figures are the log's own numbers
            fig = f.figures
            if f.error == "max_len_exceeds_kv":
                assert f"({fig['kv_cache_tokens']:.0f})" in f.error_line, f.id
            elif "projected_device_mib" in fig:
                assert (f"projected to use {fig['projected_device_mib']:.0f} MiB of device memory vs. "
                        f"{fig['free_device_mib']:.0f} MiB of free device memory") in f.log, f.id
            else:
                assert f'memory.available="[{fig["gpu_available_gib"]} GiB]"' in f.log, f.id
                assert f'memory.required.full="{fig["required_full_gib"]} GiB"' in f.log, f.id
    by_id = {f.id: f for f in b19}
    assert f"{by_id['sf340'].figures['compute_buffer_bytes']:.0f}" in by_id["sf340"].log
    assert f"{by_id['sf342'].figures['compute_buffer_bytes']:.0f}" in by_id["sf342"].log
    _candidates_audited(b19, "Batch 19 (sf338-sf347)", 400, ("startup_failures_batch16_candidates.md",
                        "startup_failures_batch17_candidates.md", "startup_failures_batch18_candidates.md"),
                        used_as_ref=True)


def test_batch20_threads_are_new_state_what_they_claim_and_can_decide():
    """Batch 20 (sf348-sf349), gathered before docfix22's doctor ran on it, selected by batches 16-19's rule written
    before any doctor run (the data file's batch-20 comment and startup_failures_batch20_candidates.md): every entry
    states what made it start (a confirmed fix quoting the thread, among the log lines or notes) or prints the deciding
    figures (sf348: V0's KV capacity in its error line). Also: no thread of an earlier entry nor one listed in the batch
    16-19 candidates files, the held-out third by the rule, and the candidates file lists every thread looked at and
    not taken, none of them a taken one, each one marked 'used' being a thread of an earlier entry."""
    b20 = _new_batch(20, range(348, 350))
    engines = [f.engine for f in b20]
    assert (engines.count("vllm"), engines.count("llama.cpp")) == (1, 1)
    assert [f.id for f in b20 if f.held_out] == ["sf348"]
    confirmed = {f.id for f in b20 if f.fix and f.fix.confirmed}
    assert confirmed == {"sf349"}
    for f in b20:
        if f.id in confirmed:  # rule (a): the quote is the thread's words, among the log lines or the notes
            assert f.fix.quote in f.log or f.fix.quote in (f.notes or ""), f.id
        else:  # rule (b): the figures are the log's own numbers
            assert f.error == "max_len_exceeds_kv", f.id
            assert f"({f.figures['kv_cache_tokens']:.0f})" in f.error_line, f.id
            assert f"({f.settings.max_model_len})" in f.error_line, f.id
    by_id = {f.id: f for f in b20}
    for name in ("cuda0_buffer_mib", "cuda1_buffer_mib", "failed_alloc_mib"):
        assert f"{by_id['sf349'].figures[name]:.2f}" in by_id["sf349"].log, name
    _candidates_audited(b20, "Batch 20 (sf348-sf349)", 390, ("startup_failures_batch16_candidates.md",
                        "startup_failures_batch17_candidates.md", "startup_failures_batch18_candidates.md",
                        "startup_failures_batch19_candidates.md"), used_as_ref=True)
