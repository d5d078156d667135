/*
 * DPDK rte_acl on a ClassBench rule set, for comparison with rampart's classifier in the
 * same run (dev-only: needs Debian's libdpdk-dev; see README.md beside this file).
 *
 *   acl_compare RULES TRACE UNIFORM_OUT [sse|avx2|avx512x16|avx512x32|scalar|default]
 *
 * Loads RULES (ClassBench filter format) into one rte_acl context (5 fields: protocol,
 * source and destination address, ports; priority falls with the line number, so the
 * highest-priority match is the first match), builds it, and classifies:
 *   - every header of TRACE (ClassBench trace format), in bursts of 64;
 *   - 100,000 uniformly random headers (protocol TCP, UDP, ICMP or a random byte), drawn
 *     with the xorshift generator and seed of rampart_classify::bench::uniform_headers,
 *     which it also writes to UNIFORM_OUT in trace format so that `rampart classify --bench`
 *     times the very same headers.
 * Every answer is checked against a linear first-match scan (all headers up to 20,000 of
 * them, a strided sample beyond). Prints one line of JSON: rules, headers, alg, build_ms,
 * trace_ns and uniform_ns (median over at least 7 passes and 200 ms after a warm-up pass,
 * wall clock per header), mismatches.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_acl.h>
#include <rte_byteorder.h>
#include <rte_eal.h>

enum { F_PROTO, F_SRC, F_DST, F_SPORT, F_DPORT, NFIELDS };

/* The lookup key, in network byte order as a packet would hold it. */
struct key {
	uint8_t proto;
	uint8_t pad[3];
	uint32_t src;
	uint32_t dst;
	uint16_t sport;
	uint16_t dport;
};

static struct rte_acl_field_def defs[NFIELDS] = {
	{.type = RTE_ACL_FIELD_TYPE_BITMASK, .size = 1, .field_index = F_PROTO,
	 .input_index = 0, .offset = offsetof(struct key, proto)},
	{.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4, .field_index = F_SRC,
	 .input_index = 1, .offset = offsetof(struct key, src)},
	{.type = RTE_ACL_FIELD_TYPE_MASK, .size = 4, .field_index = F_DST,
	 .input_index = 2, .offset = offsetof(struct key, dst)},
	{.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2, .field_index = F_SPORT,
	 .input_index = 3, .offset = offsetof(struct key, sport)},
	{.type = RTE_ACL_FIELD_TYPE_RANGE, .size = 2, .field_index = F_DPORT,
	 .input_index = 3, .offset = offsetof(struct key, dport)},
};

RTE_ACL_RULE_DEF(acl_rule, NFIELDS);

/* One rule as ranges, host order, for the oracle. */
struct box {
	uint32_t lo[5], hi[5]; /* src, dst, sport, dport, proto */
};

/* A header, host order: src, dst, sport, dport, proto. */
struct hdr {
	uint32_t v[5];
};

static double now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e9 + t.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static void die(const char *what, const char *file, long line)
{
	fprintf(stderr, "acl_compare: %s:%ld: %s\n", file, line, what);
	exit(1);
}

static int parse_prefix(const char *s, uint32_t *addr, uint32_t *len)
{
	unsigned a, b, c, d, l;
	if (sscanf(s, "%u.%u.%u.%u/%u", &a, &b, &c, &d, &l) != 5 || a > 255 || b > 255 ||
	    c > 255 || d > 255 || l > 32)
		return -1;
	*addr = a << 24 | b << 16 | c << 8 | d;
	*len = l;
	return 0;
}

static size_t read_rules(const char *file, struct acl_rule **out, struct box **boxes)
{
	FILE *f = fopen(file, "r");
	if (!f)
		die(strerror(errno), file, 0);
	size_t n = 0, cap = 1024;
	struct acl_rule *rules = calloc(cap, sizeof(*rules));
	struct box *bx = calloc(cap, sizeof(*bx));
	char line[512], src[64], dst[64];
	unsigned slo, shi, dlo, dhi, proto, pmask;
	long ln = 0;
	while (fgets(line, sizeof(line), f)) {
		ln++;
		if (line[0] != '@')
			continue;
		if (sscanf(line + 1, "%63s %63s %u : %u %u : %u %x/%x", src, dst, &slo, &shi, &dlo,
			   &dhi, &proto, &pmask) != 8)
			die("not a ClassBench filter line", file, ln);
		if (n == cap) {
			cap *= 2;
			rules = realloc(rules, cap * sizeof(*rules));
			bx = realloc(bx, cap * sizeof(*bx));
		}
		struct acl_rule *r = &rules[n];
		struct box *b = &bx[n];
		memset(r, 0, sizeof(*r));
		uint32_t sa, sl, da, dl;
		if (parse_prefix(src, &sa, &sl) || parse_prefix(dst, &da, &dl))
			die("bad prefix", file, ln);
		if (shi > 65535 || dhi > 65535 || slo > shi || dlo > dhi || proto > 255 || pmask > 255)
			die("bad port range or protocol", file, ln);
		uint32_t sm = sl ? UINT32_MAX << (32 - sl) : 0, dm = dl ? UINT32_MAX << (32 - dl) : 0;
		r->data.category_mask = 1;
		r->data.priority = RTE_ACL_MAX_PRIORITY - (int32_t)n;
		r->data.userdata = (uint32_t)n + 1;
		r->field[F_PROTO].value.u8 = proto;
		r->field[F_PROTO].mask_range.u8 = pmask;
		r->field[F_SRC].value.u32 = sa & sm;
		r->field[F_SRC].mask_range.u32 = sl;
		r->field[F_DST].value.u32 = da & dm;
		r->field[F_DST].mask_range.u32 = dl;
		r->field[F_SPORT].value.u16 = slo;
		r->field[F_SPORT].mask_range.u16 = shi;
		r->field[F_DPORT].value.u16 = dlo;
		r->field[F_DPORT].mask_range.u16 = dhi;
		b->lo[0] = sa & sm;
		b->hi[0] = (sa & sm) | ~sm;
		b->lo[1] = da & dm;
		b->hi[1] = (da & dm) | ~dm;
		b->lo[2] = slo;
		b->hi[2] = shi;
		b->lo[3] = dlo;
		b->hi[3] = dhi;
		/* ClassBench protocols are exact (0xFF) or any (0x00). */
		b->lo[4] = pmask ? proto : 0;
		b->hi[4] = pmask ? proto : 255;
		n++;
	}
	fclose(f);
	*out = rules;
	*boxes = bx;
	return n;
}

static size_t read_trace(const char *file, struct hdr **out)
{
	FILE *f = fopen(file, "r");
	if (!f)
		die(strerror(errno), file, 0);
	size_t n = 0, cap = 1024;
	struct hdr *h = calloc(cap, sizeof(*h));
	char line[256];
	long ln = 0;
	while (fgets(line, sizeof(line), f)) {
		ln++;
		unsigned long v[5];
		if (sscanf(line, "%lu %lu %lu %lu %lu", &v[0], &v[1], &v[2], &v[3], &v[4]) != 5)
			continue;
		if (n == cap) {
			cap *= 2;
			h = realloc(h, cap * sizeof(*h));
		}
		for (int i = 0; i < 5; i++)
			h[n].v[i] = (uint32_t)v[i];
		n++;
	}
	fclose(f);
	*out = h;
	return n;
}

static uint64_t xs_state = 0x9e3779b97f4a7c15ull;

static uint64_t xs_next(void)
{
	xs_state ^= xs_state << 13;
	xs_state ^= xs_state >> 7;
	xs_state ^= xs_state << 17;
	return xs_state;
}

static uint32_t first_match(const struct box *b, size_t n, const struct hdr *h)
{
	for (size_t i = 0; i < n; i++) {
		int ok = 1;
		for (int d = 0; d < 5 && ok; d++)
			ok = b[i].lo[d] <= h->v[d] && h->v[d] <= b[i].hi[d];
		if (ok)
			return (uint32_t)i + 1;
	}
	return 0;
}

/* Classifies all of `h` in bursts of 64; returns the median ns per header over the passes. */
static double timed(struct rte_acl_ctx *ctx, const struct hdr *h, size_t n, uint32_t *res)
{
	struct key *keys = calloc(n, sizeof(*keys));
	const uint8_t **ptrs = calloc(n, sizeof(*ptrs));
	for (size_t i = 0; i < n; i++) {
		keys[i].src = rte_cpu_to_be_32(h[i].v[0]);
		keys[i].dst = rte_cpu_to_be_32(h[i].v[1]);
		keys[i].sport = rte_cpu_to_be_16((uint16_t)h[i].v[2]);
		keys[i].dport = rte_cpu_to_be_16((uint16_t)h[i].v[3]);
		keys[i].proto = (uint8_t)h[i].v[4];
		ptrs[i] = (const uint8_t *)&keys[i];
	}
	/* As rampart's --bench does: one warm-up pass, then at least 7 passes and 200 ms. */
	double t[4096];
	int reps = 0;
	double began = 0;
	for (int pass = -1; pass < 4096; pass++) {
		double start = now_ns();
		if (pass == 0)
			began = start;
		for (size_t i = 0; i < n; i += 64) {
			uint32_t k = n - i < 64 ? (uint32_t)(n - i) : 64;
			rte_acl_classify(ctx, ptrs + i, res + i, k, 1);
		}
		double end = now_ns();
		if (pass < 0)
			continue;
		t[reps++] = (end - start) / (double)n;
		if (reps >= 7 && end - began >= 200e6)
			break;
	}
	qsort(t, reps, sizeof(t[0]), cmp_double);
	double median = t[reps / 2];
	free(keys);
	free(ptrs);
	return median;
}

static size_t check(const struct box *b, size_t nr, const struct hdr *h, size_t n,
		    const uint32_t *res)
{
	size_t stride = n > 20000 ? n / 20000 : 1, bad = 0;
	for (size_t i = 0; i < n; i += stride)
		bad += first_match(b, nr, &h[i]) != res[i];
	return bad;
}

int main(int argc, char **argv)
{
	const char *alg = argc > 4 ? argv[4] : "sse";
	/* DPDK runs its AVX-512 methods only when told it may use 512-bit vectors. */
	int wide = !strncmp(alg, "avx512", 6);
	char *eal[] = {argv[0], "--no-huge", "--no-pci", "-m", "8192", "-l", "0",
		       "--log-level=lib.eal:error", "--no-telemetry",
		       wide ? "--force-max-simd-bitwidth=512" : NULL, NULL};
	if (argc < 4) {
		fprintf(stderr,
			"usage: %s RULES TRACE UNIFORM_OUT "
			"[sse|avx2|avx512x16|avx512x32|scalar|default]\n",
			argv[0]);
		return 2;
	}
	if (rte_eal_init(wide ? 10 : 9, eal) < 0) {
		fprintf(stderr, "acl_compare: rte_eal_init failed\n");
		return 1;
	}
	struct acl_rule *rules;
	struct box *boxes;
	size_t nr = read_rules(argv[1], &rules, &boxes);
	struct hdr *trace;
	size_t nt = read_trace(argv[2], &trace);
	size_t nu = 100000;
	struct hdr *uni = calloc(nu, sizeof(*uni));
	FILE *uo = fopen(argv[3], "w");
	if (!uo)
		die(strerror(errno), argv[3], 0);
	for (size_t i = 0; i < nu; i++) {
		uni[i].v[0] = (uint32_t)xs_next();
		uni[i].v[1] = (uint32_t)xs_next();
		uni[i].v[2] = (uint32_t)xs_next() & 0xffff;
		uni[i].v[3] = (uint32_t)xs_next() & 0xffff;
		uint64_t p = xs_next() % 4;
		uni[i].v[4] = p == 0 ? 6 : p == 1 ? 17 : p == 2 ? 1 : (uint32_t)xs_next() & 0xff;
		fprintf(uo, "%u\t%u\t%u\t%u\t%u\t0\t0\n", uni[i].v[0], uni[i].v[1], uni[i].v[2],
			uni[i].v[3], uni[i].v[4]);
	}
	fclose(uo);

	struct rte_acl_param prm = {.name = "cmp", .socket_id = SOCKET_ID_ANY,
				    .rule_size = RTE_ACL_RULE_SZ(NFIELDS),
				    .max_rule_num = (uint32_t)nr};
	struct rte_acl_ctx *ctx = rte_acl_create(&prm);
	if (!ctx)
		die("rte_acl_create failed", argv[1], 0);
	double start = now_ns();
	if (rte_acl_add_rules(ctx, (const struct rte_acl_rule *)rules, (uint32_t)nr) != 0)
		die("rte_acl_add_rules failed", argv[1], 0);
	struct rte_acl_config cfg = {.num_categories = 1, .num_fields = NFIELDS};
	memcpy(cfg.defs, defs, sizeof(defs));
	int rc = rte_acl_build(ctx, &cfg);
	if (rc != 0)
		die(strerror(-rc), argv[1], 0);
	double build_ms = (now_ns() - start) / 1e6;
	enum rte_acl_classify_alg a = RTE_ACL_CLASSIFY_DEFAULT;
	if (!strcmp(alg, "sse"))
		a = RTE_ACL_CLASSIFY_SSE;
	else if (!strcmp(alg, "avx2"))
		a = RTE_ACL_CLASSIFY_AVX2;
	else if (!strcmp(alg, "avx512x16"))
		a = RTE_ACL_CLASSIFY_AVX512X16;
	else if (!strcmp(alg, "avx512x32"))
		a = RTE_ACL_CLASSIFY_AVX512X32;
	else if (!strcmp(alg, "scalar"))
		a = RTE_ACL_CLASSIFY_SCALAR;
	if (rte_acl_set_ctx_classify(ctx, a) != 0)
		die("classify method not available here", alg, 0);

	uint32_t *res = calloc(nt > nu ? nt : nu, sizeof(*res));
	double trace_ns = timed(ctx, trace, nt, res);
	size_t bad = check(boxes, nr, trace, nt, res);
	double uniform_ns = timed(ctx, uni, nu, res);
	bad += check(boxes, nr, uni, nu, res);
	printf("{\"rules\":%zu,\"headers\":%zu,\"alg\":\"%s\",\"build_ms\":%.1f,"
	       "\"trace_ns\":%.1f,\"uniform_ns\":%.1f,\"mismatches\":%zu}\n",
	       nr, nt, alg, build_ms, trace_ns, uniform_ns, bad);
	rte_acl_free(ctx);
	rte_eal_cleanup();
	return bad != 0;
}
