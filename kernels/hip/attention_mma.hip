/* attention_mma.hip — the tensor-core path of paged attention: the NHD layout with head size 128
 * (FD) over an e4m3fn or a bf16 cache, on NVIDIA devices whose device pass is sm_89+ (the fp8
 * decode is cvt.rn.f16x2.e4m3x2), pass 1 (pass 2 is attention_split.hip's attention_combine).
 *
 * The thread blocks, partitions and staging are the staged kernel's (attention_staged.hip):
 * one block of FAST_THREADS per (sequence, partition, kv head, GB q heads); each warp copies the
 * K and V rows of its chunks of CT tokens into its own SW shared-memory stages (cp.async, SW - 1
 * chunks ahead: mma_config), the 16-byte units of each row swizzled so that ldmatrix reads
 * them without bank conflicts (mma_rows).
 * What changes is the arithmetic: both products run on the tensor cores
 * (mma.sync.m16n8k16, f32 accumulation), a warp computing a chunk's scores S = Q K^T for its
 * GB heads and then O += P V, where the CUDA cores did one fused multiply-add per element and
 * head before. The tensor cores take f16 (fp8 cache) or bf16 (bf16 cache) operands:
 *   - the cache elements convert exactly (e4m3 and bf16 values are f16 and bf16 values);
 *   - the f32 queries and weights are split into NS terms of the operand type, the sum of which
 *     is the f32 value to within 2^-22 of it (f16: hi + lo; bf16: three terms), and the terms
 *     are rows of the A operand: rows s * GB + g hold term s of head g (NS * GB <= 16 rows),
 *     summed after each product. Queries are scaled by a power of two so that the largest is
 *     below 2^14 and weights by 2^14 (both undone exactly), keeping the f16 terms normal.
 * The dimensions of one mma step need not be consecutive: a sum does not care in which order
 * it adds, as long as Q and K (or P and V) use the same order. So each lane converts the
 * 4-byte runs ldmatrix hands it as they are: K rows give, for the fp8 cache, dims 4q..4q+3 of
 * a 16-dim segment (lane q = lane % 4); V tiles are read transposed (ldmatrix .trans), and for
 * the fp8 cache one byte permute turns each register into two token pairs of one dimension.
 * The online softmax is the staged kernel's, per chunk, in powers of two; a token past the
 * partition's end has weight 0 and its V row in shared memory is zeros (a stale row could hold
 * a NaN code, and 0 * NaN is NaN). NaN semantics follow the CPU reference: a NaN code makes
 * the scores (K) or the outputs (V) it enters NaN. Byte offsets into a cache tensor are 32-bit
 * (the plan checks the size). Dynamic shared memory: the block-table entries, then SW stages
 * per warp. */
#include "attention_common.h"

using namespace fp8kv_gpu;
using namespace fp8kv_gpu::attn;

namespace
{

#if defined(FP8KV_ARCH_NV_SM89_PLUS) && defined(FP8KV_CP_ASYNC)
#define FP8KV_MMA_PATH 1
#endif

/* The shared-memory rows of a cache type: a row of FD elements, unpadded, its 16-byte units
 * swizzled (unit u of row r at u ^ (r % 8)) so that the eight rows one ldmatrix reads at the
 * same unit lie in eight different bank groups; a stage holds the K rows, then the V rows of a
 * chunk of ct tokens. */
template <typename C> struct mma_rows {
    static constexpr int RB = FD * C::size;
    static constexpr int UNITS = RB / 16; /* 16-byte units of a row (8 or 16) */
    static constexpr __host__ __device__ int stage_bytes(int ct)
    {
        return 2 * ct * RB;
    }
    /* the byte offset of unit u of row r */
    static __device__ __forceinline__ int at(int r, int u)
    {
        return r * RB + ((u ^ (r & 7)) << 4);
    }
};

#ifdef FP8KV_MMA_PATH

constexpr int Q_TOP = 14; /* queries scaled below 2^Q_TOP */
constexpr int P_EXP = 14; /* weights (at most 1) scaled by 2^P_EXP */

/* What differs between the two caches. */
template <typename C> struct mma_cache;
template <> struct mma_cache<fp8_cache<FP8KV_CODEC_E4M3FN>> {
    static constexpr bool BF16 = false;
    static constexpr int NS = 2; /* f16 terms of an f32 operand */
};
template <> struct mma_cache<bf16_cache> {
    static constexpr bool BF16 = true;
    static constexpr int NS = 3;
};

/* Four 8x8 matrices of 16-bit elements from shared memory, lane L giving the address of row
 * L % 8 of matrix L / 8; TRANS: each matrix transposed. */
template <bool TRANS>
__device__ __forceinline__ void load_matrices(uint32_t address, uint32_t (&r)[4])
{
    if constexpr (TRANS)
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(address)
                     : "memory");
    else
        asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                     : "r"(address)
                     : "memory");
}

/* Four e4m3fn codes (low byte first) as two f16x2: lo from bytes 0, 1, hi from bytes 2, 3. */
__device__ __forceinline__ void e4m3x4_to_f16x2(uint32_t codes, uint32_t &lo, uint32_t &hi)
{
    asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\t"
        "cvt.rn.f16x2.e4m3x2 %0, l;\n\tcvt.rn.f16x2.e4m3x2 %1, h;\n\t}"
        : "=r"(lo), "=r"(hi)
        : "r"(codes));
}

/* d += a b: m16n8k16, f32 accumulation, f16 or bf16 operands. */
template <bool BF16>
__device__ __forceinline__ void mma(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
    if constexpr (BF16)
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    else
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, "
            "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* x rounded to the operand type (f16 or bf16), as an f32. */
template <bool BF16> __device__ __forceinline__ float round_operand(float x)
{
    if constexpr (BF16) {
        uint32_t bits;
        asm("{\n\t.reg .b16 h, z;\n\tcvt.rn.bf16.f32 h, %1;\n\tmov.b16 z, 0;\n\t"
            "mov.b32 %0, {z, h};\n\t}"
            : "=r"(bits)
            : "f"(x));
        return __uint_as_float(bits);
    } else {
        float r;
        asm("{\n\t.reg .b16 h;\n\tcvt.rn.f16.f32 h, %1;\n\tcvt.f32.f16 %0, h;\n\t}"
            : "=f"(r)
            : "f"(x));
        return r;
    }
}

/* Term `term` of the split of x: x = t0 + t1 + ... (each term the rounding of what the terms
 * before it left, so each subtraction is exact). */
template <bool BF16, int NS> __device__ __forceinline__ float split_term(float x, int term)
{
    float out = 0.0f;
#pragma unroll
    for (int s = 0; s < NS; s++) {
        const float t = round_operand<BF16>(x);
        if (s == term)
            out = t;
        x -= t;
    }
    return out;
}

/* Two operand-type elements (lo: the lower index) in one register; the values are exact. */
template <bool BF16> __device__ __forceinline__ uint32_t pack(float lo, float hi)
{
    uint32_t r;
    if constexpr (BF16)
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    else
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
    return r;
}

/* The dimension of element k (0..15) of mma step s of the scores, for lane quad q: the fp8
 * cache's 4-byte runs (see the top of the file), the bf16 cache's natural order. */
template <bool BF16> __device__ __forceinline__ int score_dim(int s, int q, int k)
{
    if constexpr (BF16)
        return 16 * s + k;
    else
        return 16 * s + 4 * q + (k >= 8 ? 2 : 0) + (k & 1);
}

/* The A fragment of mma step s of the scores: rows r = term * GB + g of the scaled queries qs
 * ([g][FD]), split into NS terms (rows past NS * GB are 0). */
template <bool BF16, int NS, int GB>
__device__ __forceinline__ void query_fragment(const float *qs, float qscale, int s, int lane,
                                               uint32_t (&a)[4])
{
    const int row = lane >> 2, q = lane & 3;
#pragma unroll
    for (int i = 0; i < 4; i++) {
        const int r = row + (i & 1) * 8, k = 2 * q + (i >> 1) * 8;
        float v[2] = {0.0f, 0.0f};
        if (r < NS * GB)
#pragma unroll
            for (int e = 0; e < 2; e++)
                v[e] = split_term<BF16, NS>(
                    qs[(r % GB) * FD + score_dim<BF16>(s, q, k + e)] * qscale, r / GB);
        a[i] = pack<BF16>(v[0], v[1]);
    }
}

/* The sum over the NS terms of a C fragment's rows for head g of this lane (g = row % GB):
 * c holds rows `row` (c[0], c[1]) and row + 8 (c[2], c[3]); out[e] is the sum for column
 * 2 q + e. A term's rows never straddle row 8 (GB divides 8). */
template <int NS, int GB>
__device__ __forceinline__ void sum_terms(const float (&c)[4], int lane, float (&out)[2])
{
    const int g = (lane >> 2) % GB, q = lane & 3;
    out[0] = out[1] = 0.0f;
#pragma unroll
    for (int s = 0; s < NS; s++) {
        const int r = s * GB + g;
        const int src = (r & 7) * 4 + q;
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const float mine = s * GB >= 8 ? c[2 + e] : c[e];
            out[e] += __shfl_sync(0xFFFFFFFFu, mine, src);
        }
    }
}

/* Copies chunk c's K and V rows (tokens t0 + CT c .. below t1) into stage s of the warp, one
 * commit group; V rows past the end are zeroed. */
template <typename C, int CT>
__device__ __forceinline__ void fill_mma_chunk(const attn_params &p, uint8_t *stages, int c, int s,
                                               int t0, int t1, int lane, const int32_t *blocks,
                                               int first_block, uint32_t rowb, uint32_t headb)
{
    typedef mma_rows<C> R;
    constexpr int SB = R::stage_bytes(CT);
    const int t = t0 + c * CT + lane;
    uint32_t off = 0;
    if (lane < CT && t < t1)
        off = ((uint32_t)blocks[block_index(p, t) - first_block] * (uint32_t)p.shape.block_size +
               (uint32_t)block_pos(p, t)) *
                  rowb +
              headb;
    const int left = t1 - (t0 + c * CT);
    uint8_t *kb = stages + (size_t)s * SB, *vb = kb + CT * R::RB;
#pragma unroll
    for (int i = 0; i < CT * R::UNITS / 32; i++) {
        const int x = i * 32 + lane, r = x / R::UNITS, u = x % R::UNITS;
        const uint32_t o = __shfl_sync(0xFFFFFFFFu, off, r);
        if (r < left) {
            cp_async(kb + R::at(r, u), p.key_cache + o + u * 16, 16);
            cp_async(vb + R::at(r, u), p.value_cache + o + u * 16, 16);
        } else {
            *reinterpret_cast<uint4 *>(vb + R::at(r, u)) = make_uint4(0, 0, 0, 0);
        }
    }
    commit_copies();
}

/* S = Q K^T for the chunk in stage kb: scores sc[j][e] of token 8 j + 2 q + e for this lane's
 * head, scaled back to the log2 domain (qback). */
template <typename C, int GB, int CT>
__device__ __forceinline__ void chunk_scores(const uint8_t *kb, const uint32_t (&qa)[8][4],
                                             float qback, int lane, float (&sc)[CT / 8][2])
{
    typedef mma_rows<C> R;
    constexpr bool BF16 = mma_cache<C>::BF16;
    constexpr int NS = mma_cache<C>::NS, NT = CT / 8;
#pragma unroll
    for (int j = 0; j < NT; j++) {
        float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        const int row = 8 * j + (lane & 7);
#pragma unroll
        for (int part = 0; part < R::UNITS / 4; part++) { /* 64 bytes of each of 8 rows */
            uint32_t r[4];
            load_matrices<false>(shared_address(kb + R::at(row, 4 * part + (lane >> 3))), r);
            if constexpr (BF16) { /* 32 dims: two mma steps */
                mma<true>(acc, qa[2 * part], r[0], r[1]);
                mma<true>(acc, qa[2 * part + 1], r[2], r[3]);
            } else { /* 64 dims: four mma steps, one register each */
#pragma unroll
                for (int m = 0; m < 4; m++) {
                    uint32_t lo, hi;
                    e4m3x4_to_f16x2(r[m], lo, hi);
                    mma<false>(acc, qa[4 * part + m], lo, hi);
                }
            }
        }
        float s2[2];
        sum_terms<NS, GB>(acc, lane, s2);
        sc[j][0] = s2[0] * qback;
        sc[j][1] = s2[1] * qback;
    }
}

/* O += P V for the chunk in stage vb: pw[j][e] the weights (scaled by 2^P_EXP) of token
 * 8 j + 2 q + e for this lane's head; o[16][4] the output tiles (see out_dim). */
template <typename C, int GB, int CT>
__device__ __forceinline__ void chunk_values(const uint8_t *vb, const float (&pw)[CT / 8][2],
                                             int lane, float (&o)[16][4])
{
    typedef mma_rows<C> R;
    constexpr bool BF16 = mma_cache<C>::BF16;
    constexpr int NS = mma_cache<C>::NS, KS = CT / 16;
    const int row = lane >> 2;
#pragma unroll
    for (int ks = 0; ks < KS; ks++) {
        /* the A fragment: rows row (+ 8) = term (row (+ 8)) / GB of the weights */
        uint32_t a[4];
#pragma unroll
        for (int i = 0; i < 4; i++) {
            const int r = row + (i & 1) * 8, j = 2 * ks + (i >> 1);
            float v[2] = {0.0f, 0.0f};
            if (r < NS * GB)
#pragma unroll
                for (int e = 0; e < 2; e++)
                    v[e] = split_term<BF16, NS>(pw[j][e], r / GB);
            a[i] = pack<BF16>(v[0], v[1]);
        }
        /* lane L reads row 16 ks + 8 ((L / 8) % 2) + L % 8 at byte 16 (L / 16) of each 32 */
        const int vrow = 16 * ks + 8 * ((lane >> 3) & 1) + (lane & 7);
#pragma unroll
        for (int grp = 0; grp < R::UNITS / 2; grp++) { /* 32 bytes of 16 rows */
            uint32_t r[4];
            load_matrices<true>(shared_address(vb + R::at(vrow, 2 * grp + (lane >> 4))), r);
            if constexpr (BF16) { /* dims 16 grp + n and 16 grp + 8 + n */
                mma<true>(o[2 * grp], a, r[0], r[1]);
                mma<true>(o[2 * grp + 1], a, r[2], r[3]);
            } else { /* bytes (tokens 2q, 2q + 1; dims 2c, 2c + 1) -> per dim, the token pair */
#pragma unroll
                for (int h = 0; h < 2; h++) {
                    uint32_t lo0, hi0, lo1, hi1;
                    e4m3x4_to_f16x2(__byte_perm(r[2 * h], 0, 0x3120), lo0, hi0);
                    e4m3x4_to_f16x2(__byte_perm(r[2 * h + 1], 0, 0x3120), lo1, hi1);
                    mma<false>(o[4 * grp + 2 * h], a, lo0, lo1);     /* even dims */
                    mma<false>(o[4 * grp + 2 * h + 1], a, hi0, hi1); /* odd dims */
                }
            }
        }
    }
}

/* The dimension of column 2 q + e of output tile `tile`. */
template <bool BF16> __device__ __forceinline__ int out_dim(int tile, int q, int e)
{
    if constexpr (BF16) /* tile = 2 grp + w: dims 16 grp + 8 w + n */
        return 8 * tile + 2 * q + e;
    else /* tile = 4 grp + 2 h + parity: dims 32 grp + 16 h + 2 n + parity */
        return 16 * (tile >> 1) + 4 * q + 2 * e + (tile & 1);
}

/* The block's GB query heads into qs ([g][FD], times q_scale), and the bits of the largest
 * finite magnitude among them into qmax (zeroed before the barrier this follows); ends with a
 * barrier, after which qmax is final. */
template <int GB>
__device__ __forceinline__ void load_queries(const attn_params &p, int seq, int q0, float *qs,
                                             unsigned *qmax)
{
    unsigned mine = 0;
    for (int i = threadIdx.x; i < GB * FD; i += FAST_THREADS) {
        const float v =
            p.query[((size_t)seq * p.num_q_heads + q0 + i / FD) * FD + i % FD] * p.q_scale;
        qs[i] = v;
        if (isfinite(v)) /* the magnitudes of finite floats order as their bits */
            mine = max(mine, __float_as_uint(fabsf(v)));
    }
    atomicMax(qmax, mine);
    __syncthreads();
}

/* The A fragments of the scores' 8 mma steps: the queries times 2^qexp, the largest below
 * 2^Q_TOP (or as they are when all are 0); qback = 2^-qexp undoes it. qmax: the shared word
 * load_queries filled. */
template <bool BF16, int NS, int GB>
__device__ __forceinline__ void query_fragments(const float *qs, const unsigned &qmax, int lane,
                                                uint32_t (&qa)[8][4], float &qback)
{
    int top = 0;
    if (qmax != 0)
        frexpf(__uint_as_float(qmax), &top);
    const int qexp = qmax != 0 ? min(126, max(-126, Q_TOP - top)) : 0;
    const float qscale = ldexpf(1.0f, qexp);
    qback = ldexpf(1.0f, -qexp);
#pragma unroll
    for (int s = 0; s < 8; s++)
        query_fragment<BF16, NS, GB>(qs, qscale, s, lane, qa[s]);
}

/* The online softmax over one chunk, for this lane's head (the 4 lanes of a quad hold its
 * tokens 2 q, 2 q + 1 of each 8; `left` tokens of the chunk are the partition's): the running
 * maximum m and sum l, the outputs o rescaled when m grows, and pw the chunk's weights times
 * pscale (0 past the partition's end). */
template <int CT>
__device__ __forceinline__ void chunk_softmax(const float (&sc)[CT / 8][2], int left, int q,
                                              float pscale, float &m, float &l, float (&o)[16][4],
                                              float (&pw)[CT / 8][2])
{
    constexpr int NT = CT / 8;
    float top_s = -INFINITY;
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 2; e++)
            if (8 * j + 2 * q + e < left)
                top_s = fmaxf(top_s, sc[j][e]);
    top_s = fmaxf(top_s, __shfl_xor_sync(0xFFFFFFFFu, top_s, 1));
    top_s = fmaxf(top_s, __shfl_xor_sync(0xFFFFFFFFu, top_s, 2));
    if (top_s > m) {
        const float r = exp2f(m - top_s);
        m = top_s;
        l *= r;
#pragma unroll
        for (int t = 0; t < 16; t++)
#pragma unroll
            for (int k = 0; k < 4; k++)
                o[t][k] *= r;
    }
#pragma unroll
    for (int j = 0; j < NT; j++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            const float w = 8 * j + 2 * q + e < left ? exp2f(sc[j][e] - m) : 0.0f;
            l += w;
            pw[j][e] = w * pscale;
        }
}

/* This warp's result for each head, where merge_partition reads it: the outputs' terms summed
 * and scaled back (macc, [w][g][FD]), the lanes of a quad's sums l added (ml), the maximum m
 * (mm). */
template <bool BF16, int NS, int GB>
__device__ __forceinline__ void
store_warp_result(const float (&o)[16][4], float m, float l, int lane, int warp, float *macc,
                  float (&mm)[FAST_WARPS][GB], float (&ml)[FAST_WARPS][GB])
{
    const float oback = ldexpf(1.0f, -P_EXP);
    const int row = lane >> 2, q = lane & 3;
#pragma unroll
    for (int t = 0; t < 16; t++) {
        float sum[2];
        sum_terms<NS, GB>(o[t], lane, sum);
        if (row < GB)
#pragma unroll
            for (int e = 0; e < 2; e++)
                macc[((size_t)warp * GB + row) * FD + out_dim<BF16>(t, q, e)] = sum[e] * oback;
    }
    l += __shfl_xor_sync(0xFFFFFFFFu, l, 1);
    l += __shfl_xor_sync(0xFFFFFFFFu, l, 2);
    if (row < GB && q == 0) {
        mm[warp][row] = m;
        ml[warp][row] = l;
    }
}

template <typename C, int GB, int CT, int SW>
__global__ void __launch_bounds__(FAST_THREADS, STAGED_MIN_BLOCKS) attention_mma(attn_params p)
{
    allow_combine_launch();
    typedef mma_rows<C> R;
    constexpr bool BF16 = mma_cache<C>::BF16;
    constexpr int NT = CT / 8, NS = mma_cache<C>::NS, SB = R::stage_bytes(CT);
    const block_work work = block_work_of(p, GB);
    const int seq = work.seq, part = work.part, kvh = work.kvh, q0 = work.q0;
    const int n = p.seq_lens[seq], t0 = first_token(p.row_first, seq) + part * p.partition;
    if (t0 >= n) {
        skip_partition<GB, FAST_THREADS>(p, seq, q0, part);
        return;
    }
    const int t1 = n - t0 < p.partition ? n : t0 + p.partition;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, q = lane & 3;

    __shared__ __align__(16) float qs[GB * FD]; /* [g][d], times q_scale */
    __shared__ float mm[FAST_WARPS][GB], ml[FAST_WARPS][GB];
    __shared__ unsigned qmax;
    extern __shared__ __align__(16) uint8_t smem[];
    int32_t *blocks = reinterpret_cast<int32_t *>(smem);
    uint8_t *const area = stage_area(smem, p.table_words);
    uint8_t *const stages = area + (size_t)warp * SW * SB;

    const int first_block = block_index(p, t0), nblocks = block_index(p, t1 - 1) - first_block + 1;
    load_block_table<FAST_THREADS>(p, seq, first_block, nblocks, blocks);
    if (threadIdx.x == 0)
        qmax = 0;
    __syncthreads();

    /* the first stage filled first (the copies need only the block table, so they are in flight
     * while the queries are prepared), the other stages after the queries, then each refilled
     * as soon as it is consumed: SW - 1 chunks in flight while one is computed. So every warp's
     * first chunk is queued alone, ahead of the rest, instead of waiting behind all the warps'
     * stages (docs/performance.md, §Attention: first stage alone) */
    const uint32_t rowb = (uint32_t)p.shape.num_heads * FD * C::size;
    const uint32_t headb = (uint32_t)kvh * FD * C::size;
    const int nchunks = (t1 - t0 + CT - 1) / CT;
    auto fill = [&](int c, int s) {
        fill_mma_chunk<C, CT>(p, stages, c, s, t0, t1, lane, blocks, first_block, rowb, headb);
    };
    /* the warp's k-th chunk into stage k, if it has one */
    auto fill_stage = [&](int k) {
        if (warp + k * FAST_WARPS < nchunks)
            fill(warp + k * FAST_WARPS, k);
        else
            commit_copies();
    };
    fill_stage(0);

    load_queries<GB>(p, seq, q0, qs, &qmax);
    uint32_t qa[8][4];
    float qback;
    query_fragments<BF16, NS, GB>(qs, qmax, lane, qa, qback);
#pragma unroll
    for (int k = 1; k < SW; k++)
        fill_stage(k);

    float m = -INFINITY, l = 0.0f, o[16][4];
#pragma unroll
    for (int t = 0; t < 16; t++)
#pragma unroll
        for (int k = 0; k < 4; k++)
            o[t][k] = 0.0f;
    const float pscale = ldexpf(1.0f, P_EXP);
    int s = 0;
    for (int c = warp; c < nchunks; c += FAST_WARPS, s = s + 1 == SW ? 0 : s + 1) {
        wait_copies<SW - 1>();
        __syncwarp();
        const uint8_t *kb = stages + (size_t)s * SB, *vb = kb + CT * R::RB;
        const int left = t1 - (t0 + c * CT);
        float sc[NT][2], pw[NT][2];
        chunk_scores<C, GB, CT>(kb, qa, qback, lane, sc);
        chunk_softmax<CT>(sc, left, q, pscale, m, l, o, pw);
        chunk_values<C, GB, CT>(vb, pw, lane, o);
        __syncwarp(); /* the stage is consumed */
        if (c + SW * FAST_WARPS < nchunks)
            fill(c + SW * FAST_WARPS, s);
        else
            commit_copies();
    }
    wait_copies<0>();
    __syncthreads(); /* the stages are free: the merge reuses them */

    float *macc = reinterpret_cast<float *>(area); /* [w][g][FD] */
    store_warp_result<BF16, NS, GB>(o, m, l, lane, warp, macc, mm, ml);
    __syncthreads();
    merge_partition<GB, FAST_THREADS>(p, macc, mm, ml, seq, q0, part);
}

#else /* no tensor-core path in this device pass: never launched (see the plan) */

template <typename C, int GB, int CT, int SW> __global__ void attention_mma(attn_params p)
{
    (void)p;
}

#endif

template <typename C, int CT, int SW> kernel_fn mma_of_gb(int gb)
{
    return gb == 4   ? attention_mma<C, 4, CT, SW>
           : gb == 2 ? attention_mma<C, 2, CT, SW>
                     : attention_mma<C, 1, CT, SW>;
}

/* The chunk and stage counts of each cache: tokens per chunk, stages per warp (SW - 1 chunks
 * in flight while one is computed). More data in flight per warp pays; more warps per
 * multiprocessor (and so more concurrent streams of cache blocks) does not: these two were the
 * fastest of the shapes measured, at 2 blocks per multiprocessor for fp8 and 1 for bf16
 * (docs/performance.md, §Attention: chunk shapes). What else was tried around this kernel and
 * where its time goes: §Attention: tensor-core experiments and §Attention: where the time goes. */
template <typename C> struct mma_config;
template <> struct mma_config<fp8_cache<FP8KV_CODEC_E4M3FN>> {
    static constexpr int CT = 32, SW = 3;
};
template <> struct mma_config<bf16_cache> {
    static constexpr int CT = 16, SW = 4;
};

template <typename C> kernel_fn mma_kernel_of(int gb)
{
    return mma_of_gb<C, mma_config<C>::CT, mma_config<C>::SW>(gb);
}

template <typename C> size_t mma_stages_of()
{
    return (size_t)FAST_WARPS * mma_config<C>::SW *
           (size_t)mma_rows<C>::stage_bytes(mma_config<C>::CT);
}

} // namespace

namespace fp8kv_gpu
{
namespace attn
{

kernel_fn mma_kernel(int cache_bf16, int gb)
{
    return cache_bf16 ? mma_kernel_of<bf16_cache>(gb)
                      : mma_kernel_of<fp8_cache<FP8KV_CODEC_E4M3FN>>(gb);
}

size_t mma_stage_bytes(int cache_bf16)
{
    return cache_bf16 ? mma_stages_of<bf16_cache>()
                      : mma_stages_of<fp8_cache<FP8KV_CODEC_E4M3FN>>();
}

} // namespace attn
} // namespace fp8kv_gpu
