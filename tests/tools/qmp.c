// SPDX-License-Identifier: MIT
/*
 * qmp: sends QMP commands to a QEMU monitor socket and prints each reply on its own line.
 *   qmp SOCK '{"execute":"query-hvmtrace"}' ...
 * Exits 0 if every command returned "return", 1 if one returned "error" (all are still sent), 2 on I/O
 * or protocol trouble. Events QEMU sends in between are skipped.
 */
#include <json-c/json.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* Reads one JSON object per line from f; NULL at EOF. */
static struct json_object *read_obj(FILE *f)
{
	static char line[1 << 16];

	if (!fgets(line, sizeof(line), f))
		return NULL;
	return json_tokener_parse(line);
}

/* The next reply (skipping events), or NULL. */
static struct json_object *reply(FILE *f)
{
	struct json_object *o;

	while ((o = read_obj(f))) {
		if (!json_object_object_get_ex(o, "event", NULL))
			return o;
		json_object_put(o);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct json_object *o;
	int fd, status = 0;
	FILE *f;

	if (argc < 3 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: qmp SOCK COMMAND-JSON...\n");
		return 2;
	}
	strcpy(sa.sun_path, argv[1]);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror(argv[1]);
		return 2;
	}
	f = fdopen(fd, "r+");
	o = read_obj(f); /* greeting */
	if (!o || !json_object_object_get_ex(o, "QMP", NULL)) {
		fprintf(stderr, "qmp: %s: no QMP greeting\n", argv[1]);
		return 2;
	}
	json_object_put(o);
	fputs("{\"execute\":\"qmp_capabilities\"}\n", f);
	fflush(f);
	o = reply(f);
	json_object_put(o);
	for (int i = 2; i < argc; i++) {
		fprintf(f, "%s\n", argv[i]);
		fflush(f);
		o = reply(f);
		if (!o) {
			fprintf(stderr, "qmp: %s: connection closed\n", argv[1]);
			return 2;
		}
		puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		if (!json_object_object_get_ex(o, "return", NULL))
			status = 1;
		json_object_put(o);
	}
	fclose(f);
	return status;
}
