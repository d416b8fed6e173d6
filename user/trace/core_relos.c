// SPDX-License-Identifier: GPL-2.0
#include <bpf/btf.h>

#include "trace/core_relos.h"

/* .BTF.ext's header, up to its CO-RE part. */
struct btf_ext_hdr {
	__u16 magic;
	__u8 version, flags;
	__u32 hdr_len;
	__u32 func_info_off, func_info_len, line_info_off, line_info_len;
	__u32 core_relo_off, core_relo_len;
};

/* Records from off to end: rec_size, then per section {name, count, count * struct bpf_core_relo}. */
static bool each_record(const struct btf *btf, const __u32 *ext, size_t off, size_t end, core_relo_fn fn, void *ctx)
{
	size_t rec_size, n, i;
	const char *sec;

	if (end - off < 4)
		return false;
	rec_size = ext[off / 4];
	if (rec_size < sizeof(struct bpf_core_relo) || rec_size % 4)
		return false;
	for (off += 4; off + 8 <= end; off += 8 + n * rec_size) {
		sec = btf__name_by_offset(btf, ext[off / 4]);
		n = ext[off / 4 + 1];
		if (!sec || n > (end - off - 8) / rec_size)
			return false;
		for (i = 0; i < n; i++)
			if (!fn(ctx, sec, (const void *)&ext[(off + 8 + i * rec_size) / 4]))
				return false;
	}
	return off == end;
}

bool core_relos_each(const struct btf *btf, const __u32 *ext, size_t len, core_relo_fn fn, void *ctx)
{
	const struct btf_ext_hdr *h = (const void *)ext;
	size_t off;

	if (!ext || len < sizeof(*h) || h->hdr_len < sizeof(*h) || h->hdr_len % 4 || h->core_relo_off % 4 ||
	    h->hdr_len + (size_t)h->core_relo_off + h->core_relo_len > len)
		return false;
	off = h->hdr_len + h->core_relo_off;
	return !h->core_relo_len || each_record(btf, ext, off, off + h->core_relo_len, fn, ctx);
}
