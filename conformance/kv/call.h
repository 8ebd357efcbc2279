/* kv/call.h — calling KV-ABI kernels (fp8kv/kv_plugin.h) with host buffers (internal to the
 * judge library).
 *
 * A call is made from host arguments into a struct fp8kv_kv_call: a copy of the layout and the
 * arguments, with the size of every array and whether it is an output. Running it on kernels
 * over device memory stages: device copies of every array (outputs too: a cache's sentinel
 * bytes must come back untouched, each followed by canary bytes a write past it changes), the
 * call with device pointers, the outputs copied back and the canaries checked. The
 * KV plugin host sends the same struct to its worker, with the arrays moved into shared memory.
 * So the judge never depends on where, or in which process, a subject computes.
 */
#ifndef FP8KV_KV_CALL_H
#define FP8KV_KV_CALL_H

#include <stddef.h>

#include "fp8kv/kv_plugin.h"

enum fp8kv_kv_op { FP8KV_KV_OP_STORE, FP8KV_KV_OP_GATHER, FP8KV_KV_OP_ATTENTION };
#define FP8KV_KV_CALL_ARRAYS 9

/* One call: plain data (its pointers are rebuilt by fp8kv_kv_call_arrays wherever it is run). */
struct fp8kv_kv_call {
    int op; /* enum fp8kv_kv_op */
    struct fp8kv_kv_layout_v1 layout;
    union {
        struct fp8kv_kv_store_args_v1 store;
        struct fp8kv_kv_gather_args_v1 gather;
        struct fp8kv_kv_attention_args_v1 attention;
    } args;
    int arrays;                               /* how many arrays the call has */
    size_t bytes[FP8KV_KV_CALL_ARRAYS];       /* each array's size */
    int output[FP8KV_KV_CALL_ARRAYS];         /* 1: written by the call (copied back) */
    unsigned char role[FP8KV_KV_CALL_ARRAYS]; /* what each array is (kv/call.c's roles) */
};

/* fp8kv_kv_call_store / _gather / _attention: c = a call of those arguments (host pointers; the
 * sizes are computed from them: a gather's from its sequence lengths; an attention's query and
 * output from num_query_rows where query_lens is given, and num_query_rows is set to num_seqs
 * where it is not). */
void fp8kv_kv_call_store(struct fp8kv_kv_call *c, const struct fp8kv_kv_store_args_v1 *a);
void fp8kv_kv_call_gather(struct fp8kv_kv_call *c, const struct fp8kv_kv_gather_args_v1 *a);
void fp8kv_kv_call_attention(struct fp8kv_kv_call *c, const struct fp8kv_kv_attention_args_v1 *a);

/* fp8kv_kv_call_arrays: points c's arguments at c's own layout and stores in slot[i] the
 * address of array i's pointer inside c->args (c->arrays of them), so a caller can move them. */
void fp8kv_kv_call_arrays(struct fp8kv_kv_call *c, void **slot[FP8KV_KV_CALL_ARRAYS]);

/* fp8kv_kv_call_array_name: the argument name of c's array i ("key_cache", "k_head_scales"). */
const char *fp8kv_kv_call_array_name(const struct fp8kv_kv_call *c, int i);

/* fp8kv_kv_call_name: "store", "gather" or "attention". */
const char *fp8kv_kv_call_name(const struct fp8kv_kv_call *c);

/* fp8kv_kv_call_run: runs c on kernels k, which have the entry point (the caller checked the
 * subject's capabilities), staging through the device when k is on device memory. 0;
 * FP8KV_ERR_SUBJECT when the kernels returned nonzero (the message names them, the entry point
 * and the value, and the kernels' own message when they set one); FP8KV_UNAVAILABLE for
 * device kernels in a build without a GPU (or with no device open); FP8KV_ERR when staging
 * (fp8kv's own device allocations and copies) failed. */
int fp8kv_kv_call_run(const struct fp8kv_kv_kernels_v1 *k, struct fp8kv_kv_call *c);

#endif
