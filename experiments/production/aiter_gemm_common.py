"""The @triton.jit functions AITer's production GEMMs share (aiter_tri_gemm_a8w8, aiter_tri_gemm_a16w16).

Adapted from AITer (github.com/ROCm/aiter) at commit e4048607a535ace3a2b51ded31b1c8c2d45c0879
(MIT, see aiter_tri_gemm_a8w8/NOTICE and aiter_tri_gemm_a16w16/NOTICE):
* remap_xcd and pid_grid: aiter/ops/triton/utils/_triton/pid_preprocessing.py, copied verbatim.
* pid_mnk, ab_ptrs, k_iterations, load_ab and store_c: blocks that _gemm_a8w8_kernel
  (_triton_kernels/gemm/basic/gemm_a8w8.py) and _gemm_a16_w16_kernel (gemm_a16w16.py) both
  hold, moved here unchanged but for their arguments and return values (asmevo's change: one
  copy instead of two). Triton inlines every call, so the compiled objects are the ones the
  kernels' own copies gave, byte for byte (build_production.py --check).
experiments/build_production.py puts this folder on sys.path.
"""
import triton
import triton.language as tl


@triton.jit
def remap_xcd(pid, GRID_MN, NUM_XCDS: tl.constexpr = 8):
    ## pid remapping on xcds
    # Number of pids per XCD in the new arrangement
    pids_per_xcd = (GRID_MN + NUM_XCDS - 1) // NUM_XCDS
    # When GRID_MN cannot divide NUM_XCDS, some xcds will have
    # pids_per_xcd pids, the other will have pids_per_xcd - 1 pids.
    # We calculate the number of xcds that have pids_per_xcd pids as
    # tall_xcds
    tall_xcds = GRID_MN % NUM_XCDS
    if tall_xcds == 0:
        tall_xcds = tl.cast(NUM_XCDS, tall_xcds.type)
    # Compute current XCD and local pid within the XCD
    xcd = pid % NUM_XCDS
    local_pid = pid // NUM_XCDS
    # Calculate new pid based on the new grouping
    # Note that we need to consider the following two cases:
    # 1. the current pid is on a tall xcd
    # 2. the current pid is on a short xcd
    if xcd < tall_xcds:
        pid = xcd * pids_per_xcd + local_pid
    else:
        pid = (
            tall_xcds * pids_per_xcd
            + (xcd - tall_xcds) * (pids_per_xcd - 1)
            + local_pid
        )

    return pid


@triton.jit
def pid_grid(pid: int, num_pid_m: int, num_pid_n: int, GROUP_SIZE_M: tl.constexpr = 1):
    """
    Maps 1D pid to 2D grid coords (pid_m, pid_n).

    Args:
        - pid: 1D pid
        - num_pid_m: grid m size
        - num_pid_n: grid n size
        - GROUP_SIZE_M: tl.constexpr: default is 1
    """
    if GROUP_SIZE_M == 1:
        pid_m = pid // num_pid_n
        pid_n = pid % num_pid_n
    else:
        num_pid_in_group = GROUP_SIZE_M * num_pid_n
        group_id = pid // num_pid_in_group
        first_pid_m = group_id * GROUP_SIZE_M
        group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
        tl.assume(group_size_m >= 0)
        pid_m = first_pid_m + (pid % group_size_m)
        pid_n = (pid % num_pid_in_group) // group_size_m

    return pid_m, pid_n


@triton.jit
def pid_mnk(pid_unified, num_pid_m, num_pid_n, GROUP_SIZE_M: tl.constexpr, NUM_KSPLIT: tl.constexpr):
    """(pid_m, pid_n, pid_k): a remapped program id's output tile and split-K index."""
    pid_k = pid_unified % NUM_KSPLIT
    pid = pid_unified // NUM_KSPLIT

    if NUM_KSPLIT == 1:
        pid_m, pid_n = pid_grid(pid, num_pid_m, num_pid_n, GROUP_SIZE_M=GROUP_SIZE_M)
    else:
        pid_m = pid // num_pid_n
        pid_n = pid % num_pid_n

    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)
    tl.assume(pid_k >= 0)
    return pid_m, pid_n, pid_k


@triton.jit
def ab_ptrs(a_ptr, b_ptr, offs_am, offs_bn, offs_k_split, stride_am, stride_ak, stride_bk, stride_bn):
    """Pointers to the first K block of A ([BLOCK_SIZE_M, BLOCK_SIZE_K]) and B ([BLOCK_SIZE_K, BLOCK_SIZE_N])."""
    a_ptrs = a_ptr + (
        offs_am[:, None] * stride_am + offs_k_split[None, :] * stride_ak
    )
    b_ptrs = b_ptr + (
        offs_k_split[:, None] * stride_bk + offs_bn[None, :] * stride_bn
    )
    return a_ptrs, b_ptrs


@triton.jit
def k_iterations(split_k_start, K, SPLITK_BLOCK_SIZE: tl.constexpr, BLOCK_SIZE_K: tl.constexpr):
    """(k_span, num_k_iter): the K this split covers and its number of K blocks."""
    split_k_end = tl.minimum(split_k_start + SPLITK_BLOCK_SIZE, K)
    k_span = split_k_end - split_k_start
    num_k_iter = tl.cdiv(k_span, BLOCK_SIZE_K)
    return k_span, num_k_iter


@triton.jit
def load_ab(a_ptrs, b_ptrs, offs_k, k_left, EVEN_K: tl.constexpr, cache_modifier: tl.constexpr):
    """The next block of A and B; ``k_left`` (k_span - k * BLOCK_SIZE_K) masks K when not EVEN_K."""
    # Load the next block of A and B, generate a mask by checking the K dimension.
    # If it is out of bounds, set it to 0.
    if EVEN_K:
        a = tl.load(a_ptrs)
        b = tl.load(b_ptrs, cache_modifier=cache_modifier)
    else:
        a = tl.load(
            a_ptrs, mask=offs_k[None, :] < k_left, other=0.0
        )
        b = tl.load(
            b_ptrs,
            mask=offs_k[:, None] < k_left,
            other=0.0,
            cache_modifier=cache_modifier,
        )
    return a, b


@triton.jit
def store_c(c_ptr, c, pid_m, pid_n, pid_k, M, N, stride_cm, stride_cn, stride_ck,
            BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, EVEN_MN: tl.constexpr):
    """Write back the block (pid_m, pid_n) of the output matrix C, masked to [M, N] unless EVEN_MN."""
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = (
        c_ptr
        + stride_cm * offs_cm[:, None]
        + stride_cn * offs_cn[None, :]
        + pid_k * stride_ck
    )
    if EVEN_MN:
        tl.store(c_ptrs, c)
    else:
        c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
        tl.store(c_ptrs, c, mask=c_mask)
