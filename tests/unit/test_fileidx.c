// SPDX-License-Identifier: GPL-2.0
/* The index of files by (device, inode) (fileidx.h): one entry per file, found again after growth. */
#include <stdbool.h>
#include <stdio.h>

#include "base/fileidx.h"
#include "unit.h"

#define FILES 100000   /* grows from 64 slots many times */

static void many_files_found_again(void)
{
	struct fileidx x = {};
	bool ok = true;
	size_t i;

	for (i = 0; i < FILES && ok; i++)
		ok = !fileidx_put(&x, (dev_t)(i % 3), (ino_t)(i / 3 + 1), i);
	CHECK(ok && x.nr == FILES && 2 * x.nr <= x.cap);
	for (i = 0; i < FILES && ok; i++)
		ok = fileidx_get(&x, (dev_t)(i % 3), (ino_t)(i / 3 + 1)) == i;
	CHECK(ok);
	/* The same inode number on another device is another file; one not put is not found. */
	CHECK(fileidx_get(&x, 7, 1) == (size_t)-1 && fileidx_get(&x, 0, FILES) == (size_t)-1);
	fileidx_free(&x);
}

static void replaced_cleared_and_no_inode(void)
{
	struct fileidx x = {};

	CHECK(!fileidx_put(&x, 8, 42, 1) && !fileidx_put(&x, 8, 42, 2));
	CHECK(x.nr == 1 && fileidx_get(&x, 8, 42) == 2);   /* one entry per file: replaced */
	CHECK(fileidx_put(&x, 8, 0, 3) && fileidx_get(&x, 8, 0) == (size_t)-1);   /* no file has inode 0 */
	fileidx_clear(&x);
	CHECK(x.nr == 0 && fileidx_get(&x, 8, 42) == (size_t)-1);
	CHECK(!fileidx_put(&x, 8, 42, 5) && fileidx_get(&x, 8, 42) == 5);
	fileidx_free(&x);
	CHECK(fileidx_get(&x, 8, 42) == (size_t)-1);   /* an empty index answers too */
}

int main(void)
{
	RUN(many_files_found_again);
	RUN(replaced_cleared_and_no_inode);
	UNIT_EXIT();
}
