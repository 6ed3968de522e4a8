"""Triton SGMV-style LoRA kernels for benchmarks/gpu/lora_kernels.py (this project's own, written the way vLLM V1's
punica kernels work, not their code): per wrapped module one split-K shrink over every output slice and adapter
(atomic adds into a zeroed fp32 buffer) and one expand adding into the base output. Tokens are grouped by adapter:
adapter ``g`` owns rows ``seg_start[g] : seg_start[g] + seg_len[g]``; programs past an adapter's rows exit early.
"""


try:  # Triton ships with torch's CUDA wheels; without it the triton_sgmv method is skipped
    import triton
    import triton.language as tl
except ImportError:
    triton = None


if triton is not None:
    # sizes are not specialised on (fewer compilations: the H200 run has a time budget)
    @triton.jit(do_not_specialize=["M", "K", "R"])
    def _sgmv_shrink(x_ptr, a_ptr, out_ptr, seg_start_ptr, seg_len_ptr, M, K, R,
                     stride_xm, stride_as, stride_ag, stride_ak, stride_os, stride_om,
                     BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, SPLIT_K: tl.constexpr):
        pid = tl.program_id(0)
        s = tl.program_id(1)
        g = tl.program_id(2)
        n_tiles = tl.cdiv(R, BN)
        m_tiles = tl.cdiv(M, BM)
        pid_k = pid % SPLIT_K
        pid_m = (pid // SPLIT_K) % m_tiles
        pid_n = pid // (SPLIT_K * m_tiles)
        seg_len = tl.load(seg_len_ptr + g)
        if pid_m * BM < seg_len:
            start = tl.load(seg_start_ptr + g)
            rm = pid_m * BM + tl.arange(0, BM)
            rn = pid_n * BN + tl.arange(0, BN)
            rk = tl.arange(0, BK)
            mask_m = rm < seg_len
            mask_n = rn < R
            acc = tl.zeros((BM, BN), dtype=tl.float32)
            for k0 in range(pid_k * BK, K, BK * SPLIT_K):
                kk = k0 + rk
                xt = tl.load(x_ptr + (start + rm)[:, None] * stride_xm + kk[None, :],
                             mask=mask_m[:, None] & (kk[None, :] < K), other=0.0)
                at = tl.load(a_ptr + s * stride_as + g * stride_ag + kk[:, None] * stride_ak + rn[None, :],
                             mask=(kk[:, None] < K) & mask_n[None, :], other=0.0)
                acc += tl.dot(xt, at)
            ptrs = out_ptr + s * stride_os + (start + rm)[:, None] * stride_om + rn[None, :]
            tl.atomic_add(ptrs, acc, mask=mask_m[:, None] & mask_n[None, :])

    @triton.jit(do_not_specialize=["M", "R", "NMAX"])
    def _sgmv_expand(h_ptr, b_ptr, y_ptr, seg_start_ptr, seg_len_ptr, col_off_ptr, width_ptr, M, R, NMAX,
                     stride_hs, stride_hm, stride_bs, stride_bg, stride_br, stride_ym,
                     BM: tl.constexpr, BN: tl.constexpr, BR: tl.constexpr):
        pid = tl.program_id(0)
        s = tl.program_id(1)
        g = tl.program_id(2)
        m_tiles = tl.cdiv(M, BM)
        pid_m = pid % m_tiles
        pid_n = pid // m_tiles
        seg_len = tl.load(seg_len_ptr + g)
        width = tl.load(width_ptr + s)
        if (pid_m * BM < seg_len) & (pid_n * BN < width):
            start = tl.load(seg_start_ptr + g)
            col0 = tl.load(col_off_ptr + s)
            rm = pid_m * BM + tl.arange(0, BM)
            rn = pid_n * BN + tl.arange(0, BN)
            rr = tl.arange(0, BR)
            mask_m = rm < seg_len
            mask_n = rn < width
            ht = tl.load(h_ptr + s * stride_hs + (start + rm)[:, None] * stride_hm + rr[None, :],
                         mask=mask_m[:, None] & (rr[None, :] < R), other=0.0)
            bt = tl.load(b_ptr + s * stride_bs + g * stride_bg + rr[:, None] * stride_br + rn[None, :],
                         mask=(rr[:, None] < R) & mask_n[None, :], other=0.0)
            acc = tl.dot(ht.to(bt.dtype), bt)
            yp = y_ptr + (start + rm)[:, None] * stride_ym + (col0 + rn)[None, :]
            mask = mask_m[:, None] & mask_n[None, :]
            y = tl.load(yp, mask=mask, other=0.0)
            tl.store(yp, (y.to(tl.float32) + acc).to(y.dtype), mask=mask)


def sgmv_module(x, a_all, b_all, y, h, seg_start, seg_len, col_off, widths, d, rank):
    """One wrapped module the SGMV way: zero the shrink buffer, one shrink and one expand launch over every slice and
    adapter. x (M, K); a_all (S, G, K, R); b_all (S, G, R, NMAX); y (M, sum widths); h (S, M, R) float32."""
    M, K = x.shape
    S = a_all.shape[0]
    nmax = b_all.shape[-1]
    h.zero_()
    BM, BN = 16, 16
    BK = 64
    split_k = 64 if M < 128 else 8
    grid = (split_k * triton.cdiv(M, BM) * triton.cdiv(rank, BN), S, d)
    _sgmv_shrink[grid](x, a_all, h, seg_start, seg_len, M, K, rank, x.stride(0), a_all.stride(0), a_all.stride(1),
                       a_all.stride(2), h.stride(0), h.stride(1), BM=BM, BN=BN, BK=BK, SPLIT_K=split_k)
    BNE = 64
    br = max(16, triton.next_power_of_2(rank))
    grid = (triton.cdiv(M, BM) * triton.cdiv(nmax, BNE), S, d)
    _sgmv_expand[grid](h, b_all, y, seg_start, seg_len, col_off, widths, M, rank, nmax, h.stride(0), h.stride(1),
                       b_all.stride(0), b_all.stride(1), b_all.stride(2), y.stride(0), BM=BM, BN=BNE, BR=br)
