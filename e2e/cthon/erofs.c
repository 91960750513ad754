/*
 * erofs: every change to a read-only export must fail with EROFS, not with
 * some other error and not by succeeding.
 *
 *   erofs FILE DIR SUBDIR
 *
 * FILE is an existing file, DIR an existing directory, SUBDIR an existing
 * directory to try to remove. Prints one line per operation, "erofs OP ok"
 * or "erofs OP FAIL: ..."; exit 0 when every one failed as it must.
 *
 * Two changes fail with EACCES instead, by design: the client asks ACCESS
 * before it truncates or opens a file for writing, and a read-only export
 * grants no MODIFY (as knfsd on a read-only export), so the client refuses
 * without sending the SETATTR or WRITE that would answer EROFS.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

static int failed;

static void want(const char *op, int rc, int err) {
	if (rc >= 0) {
		printf("erofs %s FAIL: succeeded\n", op);
		failed++;
	} else if (errno != err) {
		printf("erofs %s FAIL: %s, want %s\n", op, strerror(errno), strerror(err));
		failed++;
	} else {
		printf("erofs %s ok (%s)\n", op, strerror(err));
	}
}

static void want_erofs(const char *op, int rc) { want(op, rc, EROFS); }

int main(int argc, char **argv) {
	if (argc != 4) {
		fprintf(stderr, "usage: erofs FILE DIR SUBDIR\n");
		return 2;
	}
	const char *file = argv[1], *dir = argv[2], *sub = argv[3];
	char p[4096];
	snprintf(p, sizeof p, "%s/erofs-created", dir);
	want_erofs("create", open(p, O_WRONLY | O_CREAT | O_EXCL, 0644));
	snprintf(p, sizeof p, "%s/erofs-dir", dir);
	want_erofs("mkdir", mkdir(p, 0755));
	snprintf(p, sizeof p, "%s/erofs-symlink", dir);
	want_erofs("symlink", symlink("target", p));
	snprintf(p, sizeof p, "%s/erofs-link", dir);
	want_erofs("link", link(file, p));
	snprintf(p, sizeof p, "%s/erofs-renamed", dir);
	want_erofs("rename", rename(file, p));
	want_erofs("unlink", unlink(file));
	want_erofs("rmdir", rmdir(sub));
	want_erofs("chmod", chmod(file, 0600));
	want_erofs("utimes", utimes(file, NULL));
	want("truncate", truncate(file, 0), EACCES);
	want("open-for-write", open(file, O_WRONLY), EACCES);
	struct stat st;
	if (stat(file, &st) != 0) {
		printf("erofs stat-after FAIL: %s: %s\n", file, strerror(errno));
		failed++;
	}
	printf("erofs done failed=%d\n", failed);
	return failed ? 1 : 0;
}
