/* SPDX-License-Identifier: GPL-2.0 */
/*
 * alloc_peers' timed loops (fast64, random, burst) over the empty allocator, kmalloc or a
 * kmem_cache: included by the three experiments that run them (alloc_peers.c,
 * sheaves_vs_partial.c, memoryless_sheaves.c). Every loop is __always_inline into its caller,
 * so each experiment measures the same instructions it measured in one file.
 */
#ifndef NUMALAB_TWIN_ALLOC_LOOPS_H
#define NUMALAB_TWIN_ALLOC_LOOPS_H

#include "twin.h"

/* alloc_peers' sizes (kernel/src/bench/alloc_peers.rs) */
#define FAST_PAIRS 20000ULL
#define RANDOM_LIVE 1000
#define RANDOM_STEPS 20000ULL
#define BURST 256
#define BURST_ROUNDS 40ULL
#define RANDOM_SEED 0x2545f4914f6cdd1dULL

/* XorShift64 of kernel/algo/src/rng.rs, bit for bit. */
struct xorshift64 {
	u64 state;
};


static inline void xorshift64_init(struct xorshift64 *r, u64 seed)
{
	r->state = seed ? seed : 0x9e3779b97f4a7c15ULL;
}

static inline u64 xorshift64_next(struct xorshift64 *r)
{
	r->state ^= r->state << 13;
	r->state ^= r->state >> 7;
	r->state ^= r->state << 17;
	return r->state;
}

/*
 * ---- alloc_peers: kmalloc and a kmem_cache, measured as kernel/src/bench/alloc_peers.rs ----
 *
 * The same measurement as numalab's: interrupts on during the timed loops; one object of the
 * workload's size class held before timing (random keeps its 1000 live objects instead); every
 * call out of line (Linux's exported kmalloc/kfree/kmem_cache_*, as numalab's #[inline(never)]
 * entry points); and the same loops around empty out-of-line functions (the harness: the loop,
 * the calls and the bookkeeping, numalab's OutOfLine(Empty)) measured first, printed as
 * harness/WORKLOAD with metric harness_instructions_per_pair, and subtracted from every
 * figure. GFP_ATOMIC as before: nothing may sleep in the loops. SLUB's fast path does not
 * disable interrupts (this_cpu_cmpxchg_double), so turning them on changes only what the
 * timer ticks add, as in numalab's figures.
 */

/* Which allocator a loop calls; a constant at every call, so each loop has direct calls. */
enum ap_peer { AP_EMPTY, AP_KMALLOC, AP_CACHE };

/* What the empty allocator hands out; only its address is used. */
static u64 ap_sink[512];

/*
 * numalab's Empty behind OutOfLine: a real call that returns a static pointer. noinline and
 * noipa keep GCC from inlining, cloning or dropping the call; the barrier from treating the
 * function as pure.
 */
static noinline __noipa void *ap_empty_alloc(size_t size, gfp_t flags)
{
	void *p = ap_sink;

	OPTIMIZER_HIDE_VAR(p);
	barrier();
	return p;
}

/* The empty free: a real call that does nothing. */
static noinline __noipa void ap_empty_free(const void *p)
{
	OPTIMIZER_HIDE_VAR(p);
	barrier();
}

static __always_inline void *ap_alloc(enum ap_peer peer, struct kmem_cache *c, size_t size)
{
	switch (peer) {
	case AP_EMPTY:
		return ap_empty_alloc(size, GFP_ATOMIC);
	case AP_KMALLOC:
		return kmalloc(size, GFP_ATOMIC);
	default:
		return kmem_cache_alloc(c, GFP_ATOMIC);
	}
}

static __always_inline void ap_free(enum ap_peer peer, struct kmem_cache *c, void *p)
{
	switch (peer) {
	case AP_EMPTY:
		ap_empty_free(p);
		break;
	case AP_KMALLOC:
		kfree(p);
		break;
	default:
		kmem_cache_free(c, p);
	}
}

/* fast64: one 64-byte object held, then FAST_PAIRS alloc+free pairs of 64 bytes. */
static __always_inline int ap_fast64(enum ap_peer peer, struct kmem_cache *c, u64 *ticks)
{
	void *held = ap_alloc(peer, c, 64), *p;
	u64 t0, i;

	if (!held)
		return -ENOMEM;
	p = ap_alloc(peer, c, 64);
	if (!p) {
		ap_free(peer, c, held);
		return -ENOMEM;
	}
	ap_free(peer, c, p);
	preempt_disable();
	t0 = rdtsc();
	for (i = 0; i < FAST_PAIRS; i++) {
		p = ap_alloc(peer, c, 64);
		if (!p)
			break;
		OPTIMIZER_HIDE_VAR(p);
		ap_free(peer, c, p);
	}
	*ticks = rdtsc() - t0;
	preempt_enable();
	ap_free(peer, c, held);
	return i == FAST_PAIRS ? 0 : -ENOMEM;
}

/* random: sizes 8..4096 from XorShift64(RANDOM_SEED), 1000 live, RANDOM_STEPS replacements. */
static __always_inline int ap_random(enum ap_peer peer, u64 *ticks)
{
	void **live = kcalloc(RANDOM_LIVE, sizeof(void *), GFP_KERNEL);
	struct xorshift64 rng;
	u64 t0, s;
	int i, err = 0;

	if (!live)
		return -ENOMEM;
	xorshift64_init(&rng, RANDOM_SEED);
	for (i = 0; i < RANDOM_LIVE; i++) {
		live[i] = ap_alloc(peer, NULL, 8 + xorshift64_next(&rng) % 4089);
		if (!live[i]) {
			err = -ENOMEM;
			goto out;
		}
	}
	preempt_disable();
	t0 = rdtsc();
	for (s = 0; s < RANDOM_STEPS; s++) {
		u64 r = xorshift64_next(&rng);
		unsigned int k = (r >> 20) % RANDOM_LIVE;

		ap_free(peer, NULL, live[k]);
		live[k] = ap_alloc(peer, NULL, 8 + r % 4089);
		if (!live[k]) {
			err = -ENOMEM;
			break;
		}
	}
	*ticks = rdtsc() - t0;
	preempt_enable();
out:
	for (i = 0; i < RANDOM_LIVE; i++)
		if (live[i])
			ap_free(peer, NULL, live[i]);
	kfree(live);
	return err;
}

/* burst: one object of `size` held, then 40 rounds of 256 allocations and 256 frees. */
static __always_inline int ap_burst(enum ap_peer peer, struct kmem_cache *c, size_t size,
				    u64 *ticks)
{
	void *held = ap_alloc(peer, c, size);
	void **objs = kcalloc(BURST, sizeof(void *), GFP_KERNEL);
	u64 total = 0, t0, round;
	int i, n, err = 0;

	if (!held || !objs) {
		err = -ENOMEM;
		goto out;
	}
	preempt_disable();
	for (round = 0; round < BURST_ROUNDS; round++) {
		t0 = rdtsc();
		for (n = 0; n < BURST; n++) {
			objs[n] = ap_alloc(peer, c, size);
			if (!objs[n])
				break;
		}
		for (i = 0; i < n; i++)
			ap_free(peer, c, objs[i]);
		total += rdtsc() - t0;
		if (n != BURST) {
			err = -ENOMEM;
			break;
		}
	}
	preempt_enable();
	*ticks = total;
out:
	if (held)
		ap_free(peer, c, held);
	kfree(objs);
	return err;
}

/* burst256: the burst of 256-byte kmalloc objects (or the harness). */
static __always_inline int ap_burst256(enum ap_peer peer, u64 *ticks)
{
	return ap_burst(peer, NULL, 256, ticks);
}

enum { AP_FAST64, AP_RANDOM, AP_BURST256, AP_WORKLOADS };

/* The three workloads on the empty allocator (harness) or kmalloc; 0 or the first error. */
static __always_inline int ap_run(enum ap_peer peer, u64 ticks[AP_WORKLOADS])
{
	int err = ap_fast64(peer, NULL, &ticks[AP_FAST64]);

	if (!err)
		err = ap_random(peer, &ticks[AP_RANDOM]);
	if (!err)
		err = ap_burst256(peer, &ticks[AP_BURST256]);
	return err;
}

/* One figure of `bench`: (ticks - harness) / pairs, as numalab's emit (v - h) (alloc_peers.c). */
void ap_record_in(const char *bench, const char *allocator, int w, u64 ticks, u64 harness);

/* A private unmergeable cache: its whole object is a usercopy region (slab_unmergeable()). */
static inline struct kmem_cache *private_cache(const char *name, unsigned int size)
{
	return kmem_cache_create_usercopy(name, size, 0, 0, 0, size, NULL);
}

#endif
