"""CPU test of proof.py's bookkeeping (no torch, no GPU): kernel names from a recorded PyTorch
profile get the right stage letters, a fusion finds its chain among candidates and not a lookalike,
and the rows' arithmetic. Prints 'N passed, N failed' and exits 1 on a failure.

  python3 examples/pytorch/proof_selftest.py [tests/data/torch_transformer_eager_h100.fprof [FPROF]]

With FPROF (an fprof binary), also --pairs' `fprof diff` on the recorded attention -> SDPA pair.
"""
import os
import shutil
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import proof  # noqa: E402  (imports no torch at module level)

passed = failed = 0


def check(ok, what):
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        print(f"FAIL  {what}")


def letters_of_recorded(db):
    """Stage letters of every kernel name in a recorded eager PyTorch profile."""
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    names = [r[0] for r in con.execute(
        "select distinct s.value from kernel k join string s on s.id = k.demangled_id")]
    con.close()
    return {n: proof.token(n) for n in names}


def check_pair_diffs(fprof, data):
    """--pairs' closing of the loop on the recorded naive-attention -> SDPA pair (an H100's)."""
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(os.path.join(data, "torch_proof_gpt_bf16_eager_h100.fprof"), os.path.join(d, "gpt_bf16_eager.fprof"))
        shutil.copy(os.path.join(data, "torch_proof_gpt_bf16_sdpa_h100.fprof"), os.path.join(d, "gpt_bf16_sdpa.fprof"))
        text = proof.pair_diffs(fprof, d, d)
        block = text[text.find("== gpt_bf16_eager -> gpt_bf16_sdpa"):]
        block = block[:block.find("\n== ")]
        check("Fusions applied" in block and "attention, 7 kernels" in block and "neighbours" in block,
              f"fprof diff finds the attention fused by SDPA (got {block[:400]!r})")
        check("== mlp_bf16_eager -> mlp_bf16_compile: not recorded" in text, "a pair not recorded says so")
        check(os.path.exists(os.path.join(d, "report_gpt_bf16_sdpa.md")), "the report against the baseline is written")
        check(os.path.exists(os.path.join(d, "pairs_table.txt")), "the pairs' table is written")


def main():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    db = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "tests/data/torch_transformer_eager_h100.fprof")
    seen = letters_of_recorded(db)
    expect = {"vectorized_layer_norm_kernel": "L", "nvjet_sm90": "G", "CUDAFunctor_add": "A",
              "GeluCUDAKernelImpl": "U", "direct_copy_kernel_cuda": "C", "fort_native_sdpa": "F"}
    for part, letter in expect.items():
        got = {seen[n] for n in seen if part in n}
        check(got == {letter}, f"kernels named *{part}* are '{letter}' (got {got})")

    mm, mul, mask, soft, copy = "nvjet_sm90_tst_64x64", "AUnaryFunctor<MulFunctor<float>>", "masked_fill_kernel", \
        "softmax_warp_forward", "direct_copy_kernel_cuda"
    add, gelu, ln = "CUDAFunctor_add<c10::BFloat16>", "GeluCUDAKernelImpl", "vectorized_layer_norm_kernel"
    attention = {"id": "attn", "stages": [copy, mm, mul, mask, soft, mm], "instances": 28, "total_saving_ns": 28e5}
    lookalike = {"id": "ln-ln", "stages": [ln, ln], "instances": 63, "total_saving_ns": 9e9}
    longer = {"id": "long", "stages": [mm, add, gelu, mm], "instances": 28, "total_saving_ns": 1e6}
    bias_gelu = {"id": "bg", "stages": [mm, add, gelu], "instances": 28, "total_saving_ns": 56e4}
    cands = [lookalike, longer, attention, bias_gelu]
    m = proof.match_candidate(cands, "sdpa")
    check(m is not None and m["candidates"] == [attention] and m["coverage"] == "exact", "attention finds its chain")
    # Hugging Face GPT-2's eager attention: q, k copies, QK^T, scale, mask add, softmax, v copy, PV,
    # and the output's layout copy: all of it is what SDPA replaces.
    hf_attention = {"id": "hf-attn", "stages": [copy, copy, mm, mul, add, soft, copy, mm, copy], "instances": 27,
                    "total_saving_ns": 27e5}
    m = proof.match_candidate([hf_attention, longer], "sdpa")
    check(m is not None and m["coverage"] == "exact", "attention with its layout copies around it is exact")
    m = proof.match_candidate([dict(hf_attention, stages=[copy, mm, mul, add, soft, copy, mm, copy, mm])], "sdpa")
    check(m is not None and m["coverage"] == "longer chain", "attention with the next GEMM is a longer chain")
    m = proof.match_candidate(cands, "bias_gelu")
    check(m is not None and m["candidates"] == [bias_gelu], "an exact chain wins over a longer one containing it")
    m = proof.match_candidate([lookalike, longer], "bias_gelu")
    check(m is not None and m["coverage"] == "longer chain", "a longer chain is taken, and said to be longer")
    check(proof.match_candidate([lookalike], "res_ln") is None, "LayerNorm -> LayerNorm is no residual chain")
    # Two shapes of one chain (a prefill and the decode steps): both are the fusion's instances.
    decode = dict(bias_gelu, id="bg-decode", instances=84, total_saving_ns=84e4)
    m = proof.match_candidate([bias_gelu, decode, longer], "bias_gelu")
    check(m is not None and m["candidates"] == [decode, bias_gelu], "every exact shape counts, largest saving first")
    check(proof.suspect({"stages": [ln, ln]}) == "same kernel on both ends of a link", "a kernel feeding itself is suspect")
    check(proof.suspect({"stages": ["cudnn_generated_fort_native_sdpa_sm90", ln]}) != "",
          "attention -> LayerNorm is suspect")
    check(proof.suspect({"stages": [add, ln]}) == "", "add -> LayerNorm is not suspect")
    # Stages in launch order, two producers meeting in one consumer: the links say no self-pair.
    fill = "FillFunctor<bool>"
    check(proof.suspect({"stages": [fill, fill, add], "links": [[0, 2], [1, 2]]}) == "",
          "two fills feeding one add are no self-pair")

    run = {"proof_run": "gpt", "dtype": "bf16", "fusions": [], "compile": False, "warmup": 2, "steps": 5,
           "regions_per_step": {"bias_gelu": 4}, "step_ms": [1.0]}
    results = {"runs": {"e": {"baseline": None, "result": run},
                        "f": {"baseline": "e", "result": dict(run, fusions=["bias_gelu"])}},
               "bench": [{"proof_bench": "gpt", "dtype": "bf16", "fusion": "bias_gelu", "saving_us": 25.0,
                          "unfused_us": 90.0, "fused_us": 65.0}]}
    rows = proof.compute_rows(results, {"e": {"fusion": {"candidates": cands}}},
                              {"e": {"kernel_us_per_step": 1000.0}, "f": {"kernel_us_per_step": 920.0}})
    check(len(rows) == 1, "one row per applied fusion")
    rows2 = proof.compute_rows(results, {"e": {"fusion": {"candidates": [bias_gelu, decode]}}},
                               {"e": {"kernel_us_per_step": 1000.0}, "f": {"kernel_us_per_step": 920.0}})
    check(rows2[0]["instances_fprof"] == 112 and abs(rows2[0]["predicted_us"] - 14e5 / 112 / 1e3) < 1e-9,
          "shapes add: (560 + 840) us over 28 + 84 instances")
    r = rows[0]
    check(abs(r["measured_kernels_us"] - 20.0) < 1e-9, "measured saving per instance: (1000 - 920) / 4")
    check(abs(r["predicted_us"] - 20.0) < 1e-9, "predicted saving per instance: total / instances")
    check(r["instances_fprof"] == 28 and r["instances_expected"] == 28, "instances: 4 per step x 7 steps")
    check(abs(r["error_vs_events"] - (20.0 - 25.0) / 25.0) < 1e-9, "error against the region benchmark")
    check(abs(r["error_vs_kernels"]) < 1e-9, "error against the profiles")
    text = proof.table_text(rows, results)
    check("median |error| vs profile kernel times, exact matches only: 0.0% over 1 fusions" in text, "median line")
    if len(sys.argv) > 2:
        check_pair_diffs(sys.argv[2], os.path.join(root, "tests/data"))
    print(f"proof_selftest: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
