/*
 * seekdir: telldir/seekdir through the kernel client, as programs use them.
 *
 *   seekdir DIR MIN_ENTRIES [CREATE]
 *
 * Creates CREATE empty files new-NNNNN in DIR first (a writable export), then
 * reads DIR to the end recording telldir() before every entry, and seeks to
 * each recorded position (in a scattered order) checking that the next
 * readdir() returns the entry recorded there. Linux hands the server's
 * READDIR cookie to programs as d_off, a signed 64-bit offset, and
 * refuses lseek to a negative one: a cookie with bit 63 set makes every such
 * seek fail (glibc's seekdir cannot report it) and the listing resume
 * elsewhere. Prints one summary line; exit 0 when DIR had at least
 * MIN_ENTRIES entries and every seek landed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: seekdir DIR MIN_ENTRIES [CREATE]\n");
		return 2;
	}
	const char *dir = argv[1];
	long min = atol(argv[2]);
	long create = argc == 4 ? atol(argv[3]) : 0;
	char path[4096];
	for (long i = 0; i < create; i++) {
		snprintf(path, sizeof path, "%s/new-%05ld", dir, i);
		int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
		if (fd < 0) {
			fprintf(stderr, "seekdir: create %s: %s\n", path, strerror(errno));
			return 1;
		}
		close(fd);
	}
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "seekdir: opendir %s: %s\n", dir, strerror(errno));
		return 1;
	}
	size_t cap = 1024, n = 0;
	long *pos = malloc(cap * sizeof *pos);
	char **name = malloc(cap * sizeof *name);
	long negative = 0;
	for (;;) {
		long p = telldir(d);
		errno = 0;
		struct dirent *e = readdir(d);
		if (!e) {
			if (errno) {
				fprintf(stderr, "seekdir: readdir %s: %s\n", dir, strerror(errno));
				return 1;
			}
			break;
		}
		if (n == cap) {
			cap *= 2;
			pos = realloc(pos, cap * sizeof *pos);
			name = realloc(name, cap * sizeof *name);
		}
		if (p < 0)
			negative++;
		pos[n] = p;
		name[n] = strdup(e->d_name);
		n++;
	}
	long bad = 0;
	/* A stride coprime with n visits every index once, far from in order. */
	size_t stride = 7919;
	while (n > 0 && stride % n == 0)
		stride++;
	for (size_t k = 0; k < n; k++) {
		size_t i = (k * stride) % n;
		seekdir(d, pos[i]);
		errno = 0;
		struct dirent *e = readdir(d);
		if (!e || strcmp(e->d_name, name[i]) != 0) {
			if (bad < 5)
				fprintf(stderr, "seekdir: %s: seekdir(%ld) then readdir gave %s, want %s (%s)\n", dir, pos[i],
					e ? e->d_name : "end of directory", name[i], errno ? strerror(errno) : "no error");
			bad++;
		}
	}
	closedir(d);
	printf("seekdir dir=%s entries=%zu seeks=%zu failed=%ld negative_positions=%ld\n", dir, n, n, bad, negative);
	if ((long)n < min) {
		fprintf(stderr, "seekdir: %s has %zu entries, want at least %ld\n", dir, n, min);
		return 1;
	}
	return bad == 0 && negative == 0 ? 0 : 1;
}
