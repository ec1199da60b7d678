/* SPDX-License-Identifier: MIT */
/*
 * SHA-1 (FIPS 180-4), only to compare a file in a work tree with the blob an
 * index entry names (X2): git's object name of a blob is SHA-1 over
 * "blob <size>\0" and the content.  Not for anything secret.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "gitguard/gitguard.h"

struct sha1 {
	uint32_t h[5];
	uint64_t len;
	unsigned char buf[64];
	size_t n;
};

static uint32_t rol(uint32_t x, int k)
{
	return x << k | x >> (32 - k);
}

static void block(struct sha1 *s, const unsigned char *p)
{
	uint32_t w[80], a, b, c, d, e, f, k, t;
	int i;

	for (i = 0; i < 16; i++)
		w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
		       (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
	for (; i < 80; i++)
		w[i] = rol(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	a = s->h[0];
	b = s->h[1];
	c = s->h[2];
	d = s->h[3];
	e = s->h[4];
	for (i = 0; i < 80; i++) {
		if (i < 20) {
			f = (b & c) | (~b & d);
			k = 0x5a827999;
		} else if (i < 40) {
			f = b ^ c ^ d;
			k = 0x6ed9eba1;
		} else if (i < 60) {
			f = (b & c) | (b & d) | (c & d);
			k = 0x8f1bbcdc;
		} else {
			f = b ^ c ^ d;
			k = 0xca62c1d6;
		}
		t = rol(a, 5) + f + e + k + w[i];
		e = d;
		d = c;
		c = rol(b, 30);
		b = a;
		a = t;
	}
	s->h[0] += a;
	s->h[1] += b;
	s->h[2] += c;
	s->h[3] += d;
	s->h[4] += e;
}

static void update(struct sha1 *s, const void *data, size_t len)
{
	const unsigned char *p = data;
	size_t take;

	s->len += len;
	while (len) {
		take = 64 - s->n < len ? 64 - s->n : len;
		memcpy(s->buf + s->n, p, take);
		s->n += take;
		p += take;
		len -= take;
		if (s->n == 64) {
			block(s, s->buf);
			s->n = 0;
		}
	}
}

/* git's blob object name of BUF (LEN bytes) into OUT (20 bytes) */
void guard_blob_sha1(const char *buf, size_t len, unsigned char out[20])
{
	guard_object_sha1("blob", buf, len, out);
}

/* git's object name of an object of TYPE ("blob", "tree") with body BUF */
void guard_object_sha1(const char *type, const char *buf, size_t len, unsigned char out[20])
{
	struct sha1 s = {{0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0}, 0, {0}, 0};
	unsigned char pad[72] = {0x80};
	char hdr[32];
	uint64_t bits;
	size_t padlen;
	int i, n;

	n = snprintf(hdr, sizeof(hdr), "%s %zu", type, len);
	update(&s, hdr, (size_t)n + 1);
	update(&s, buf, len);
	bits = s.len * 8;
	padlen = s.n < 56 ? 56 - s.n : 120 - s.n;
	for (i = 0; i < 8; i++)
		pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
	update(&s, pad, padlen + 8);
	for (i = 0; i < 5; i++) {
		out[4 * i] = (unsigned char)(s.h[i] >> 24);
		out[4 * i + 1] = (unsigned char)(s.h[i] >> 16);
		out[4 * i + 2] = (unsigned char)(s.h[i] >> 8);
		out[4 * i + 3] = (unsigned char)s.h[i];
	}
}
