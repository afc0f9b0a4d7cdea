// SPDX-License-Identifier: MIT
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "hvmtrace/options.h"
#include "hvmtrace/util.h"

#define HELP_COLUMN_MAX 30 /* option columns wider than this put their help on the next line */

struct parser {
	const struct hvt_cmdline *c;
	FILE *err;
	struct hvt_option *all; /* the table's entries, then -h/--help, then the end */
	const struct hvt_option *help;
	bool *given; /* per entry of all */
	size_t next_operand;
	char problem[256];
};

/* What parsing one argument found, besides 0 (a value taken). */
enum { BAD_VALUE = -1, BAD_COMMAND_LINE = -2, HELP_ASKED = -3 };

static bool is_operand(const struct hvt_option *o)
{
	return !o->short_name && !o->long_name && o->type != HVT_OPTION_HEADING && o->type != HVT_OPTION_END;
}

static bool takes_value(const struct hvt_option *o)
{
	return o->type != HVT_OPTION_FLAG && o->type != HVT_OPTION_FLAG_OFF;
}

/* The option as the user knows it: "--interval", or "-n" when there is no long name. */
static void spelling(const struct hvt_option *o, char *buf, size_t len)
{
	if (o->long_name)
		snprintf(buf, len, "--%s", o->long_name);
	else if (o->short_name)
		snprintf(buf, len, "-%c", o->short_name);
	else
		snprintf(buf, len, "%s", o->arg ? o->arg : "operand");
}

/* A size as the parser reads it back, in the largest binary unit that divides it ("2M", "4K"). */
static void format_size(uint64_t b, char *buf, size_t len)
{
	static const char units[] = "KMGT";
	int u = -1;

	while (u < 3 && b && !(b & 1023)) {
		b >>= 10;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%" PRIu64, b);
	else
		snprintf(buf, len, "%" PRIu64 "%c", b, units[u]);
}

static int problem(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int problem(struct parser *p, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(p->problem, sizeof(p->problem), fmt, ap);
	va_end(ap);
	return -1;
}

/* Stores n into an integer of o->value_size bytes (two's complement keeps signed values right). */
static int store_int(struct parser *p, const struct hvt_option *o, int64_t n)
{
	switch (o->value_size) {
	case 1: {
		uint8_t v = (uint8_t)n;
		memcpy(o->value, &v, 1);
		return 0;
	}
	case 2: {
		uint16_t v = (uint16_t)n;
		memcpy(o->value, &v, 2);
		return 0;
	}
	case 4: {
		uint32_t v = (uint32_t)n;
		memcpy(o->value, &v, 4);
		return 0;
	}
	case 8: {
		uint64_t v = (uint64_t)n;
		memcpy(o->value, &v, 8);
		return 0;
	}
	}
	return problem(p, "the option table gives it a %zu-byte integer, which this parser cannot fill",
		       o->value_size);
}

static int parse_integer(const char *s, int64_t *n)
{
	char *end;

	if (!*s || *s == ' ' || *s == '+')
		return -1;
	errno = 0;
	*n = strtoll(s, &end, 10);
	return errno || *end ? -1 : 0;
}

static int set_int(struct parser *p, const struct hvt_option *o, const char *v)
{
	int64_t n;

	if (parse_integer(v, &n) || n < o->min || n > o->max) {
		if (o->min == 1 && o->max == INT64_MAX)
			return problem(p, "not a positive number");
		if (o->max == INT64_MAX)
			return problem(p, "not a number of at least %" PRId64, o->min);
		return problem(p, "not a number from %" PRId64 " to %" PRId64, o->min, o->max);
	}
	return store_int(p, o, n);
}

static int set_cpu(struct parser *p, const struct hvt_option *o, const char *v)
{
	int64_t n;

	if (parse_integer(v, &n) || n < 0 || n >= CPU_SETSIZE)
		return problem(p, "not a CPU number");
	*(int *)o->value = (int)n;
	return 0;
}

static int set_duration(struct parser *p, const struct hvt_option *o, const char *v)
{
	uint64_t ns;
	char least[32];

	if (!hvt_parse_duration(v, &ns) && ns >= (uint64_t)o->min) {
		*(uint64_t *)o->value = ns;
		return 0;
	}
	if (o->min <= 1)
		return problem(p, "not a duration (e.g. 10ms, 1.5s, 5m)");
	hvt_format_duration((uint64_t)o->min, least, sizeof(least));
	return problem(p, "not a duration of at least %s (e.g. 10ms, 1.5s, 5m)", least);
}

static int set_size(struct parser *p, const struct hvt_option *o, const char *v)
{
	uint64_t b;
	char lim[32];

	if (hvt_parse_size(v, &b))
		return problem(p, "not a size (e.g. 4K, 512M, 2G)");
	if (o->unit > 1 && b % o->unit) {
		format_size(o->unit, lim, sizeof(lim));
		if (o->unit & 1023)
			return problem(p, "not a whole number of %s-byte units", lim);
		/* "4K" -> "4 KiB pages" */
		return problem(p, "not a whole number of %.*s %ciB pages", (int)strlen(lim) - 1, lim,
			       lim[strlen(lim) - 1]);
	}
	if (b < (uint64_t)o->min) {
		format_size((uint64_t)o->min, lim, sizeof(lim));
		return problem(p, "less than %s", lim);
	}
	if (o->max && b > (uint64_t)o->max) {
		format_size((uint64_t)o->max, lim, sizeof(lim));
		return problem(p, "more than %s", lim);
	}
	*(uint64_t *)o->value = b;
	return 0;
}

static int set_choice(struct parser *p, const struct hvt_option *o, const char *v)
{
	const struct hvt_opt_choice *ch = o->choices;
	size_t n = 0, used = 0;

	for (; ch[n].name; n++)
		if (!strcmp(ch[n].name, v))
			return store_int(p, o, ch[n].value);
	used = (size_t)snprintf(p->problem, sizeof(p->problem), "expected ");
	for (size_t i = 0; i < n && used < sizeof(p->problem); i++)
		used += (size_t)snprintf(p->problem + used, sizeof(p->problem) - used, "%s%s",
					 !i          ? ""
					 : i + 1 < n ? ", "
						     : " or ",
					 ch[i].name);
	return -1;
}

static int set_string(struct parser *p, const struct hvt_option *o, const char *v)
{
	if (o->type == HVT_OPTION_PATH && (!*v || strlen(v) >= PATH_MAX))
		return problem(p, "not a file name");
	if (o->type == HVT_OPTION_STRING && o->max > 0 && strlen(v) > (size_t)o->max)
		return problem(p, "longer than %" PRId64 " bytes", o->max);
	*(const char **)o->value = v;
	return 0;
}

/* One more of several operands; the limit is the table's, or the array's. */
static int add_operand(struct parser *p, const struct hvt_option *o, const char *v)
{
	struct hvt_operands *ops = o->value;
	size_t most = o->max > 0 && o->max < HVT_OPERANDS_MAX ? (size_t)o->max : HVT_OPERANDS_MAX;

	if (!*v || strlen(v) >= PATH_MAX)
		return problem(p, "not a file name");
	if (ops->n >= most)
		return problem(p, "more than %zu %ss", most, o->arg ? o->arg : "operand");
	ops->v[ops->n++] = v;
	return 0;
}

/* Gives the value v to entry o; on a bad value, says so in the uniform way. */
static int set_value(struct parser *p, const struct hvt_option *o, const char *v)
{
	int rc = 0;

	if (o == p->help)
		return HELP_ASKED;
	p->problem[0] = '\0';
	switch (o->type) {
	case HVT_OPTION_FLAG:
		*(bool *)o->value = true;
		break;
	case HVT_OPTION_FLAG_OFF:
		*(bool *)o->value = false;
		break;
	case HVT_OPTION_STRING:
	case HVT_OPTION_PATH:
		rc = set_string(p, o, v);
		break;
	case HVT_OPTION_INT:
		rc = set_int(p, o, v);
		break;
	case HVT_OPTION_CPU:
		rc = set_cpu(p, o, v);
		break;
	case HVT_OPTION_DURATION:
		rc = set_duration(p, o, v);
		break;
	case HVT_OPTION_SIZE:
		rc = set_size(p, o, v);
		break;
	case HVT_OPTION_CHOICE:
		rc = set_choice(p, o, v);
		break;
	case HVT_OPTION_CALLBACK:
		rc = o->fn(o, v, p->problem, sizeof(p->problem)) ? -1 : 0;
		break;
	case HVT_OPTION_OPERANDS:
		rc = add_operand(p, o, v);
		break;
	case HVT_OPTION_END:
	case HVT_OPTION_HEADING:
		break;
	}
	if (rc) {
		char name[64];

		spelling(o, name, sizeof(name));
		fprintf(p->err, "%s: %s '%s': %s\n", p->c->prog, name, v,
			p->problem[0] ? p->problem : "not accepted");
		return BAD_VALUE;
	}
	p->given[o - p->all] = true;
	return 0;
}

/* The entry "--name" (or a unique prefix of it) names; NULL after saying why not. */
static const struct hvt_option *find_long(struct parser *p, const char *name, size_t len)
{
	const struct hvt_option *found = NULL, *o;
	int matches = 0;

	for (o = p->all; o->type != HVT_OPTION_END; o++) {
		if (!o->long_name || strncmp(o->long_name, name, len))
			continue;
		if (strlen(o->long_name) == len)
			return o;
		found = o;
		matches++;
	}
	if (matches == 1)
		return found;
	if (matches > 1) {
		fprintf(p->err, "%s: --%.*s is ambiguous; it could be", p->c->prog, (int)len, name);
		for (o = p->all; o->type != HVT_OPTION_END; o++)
			if (o->long_name && !strncmp(o->long_name, name, len))
				fprintf(p->err, " --%s", o->long_name);
		fputc('\n', p->err);
	} else {
		fprintf(p->err, "%s: --%.*s is not an option\n", p->c->prog, (int)len, name);
	}
	return NULL;
}

static const struct hvt_option *find_short(struct parser *p, char c)
{
	for (const struct hvt_option *o = p->all; o->type != HVT_OPTION_END; o++)
		if (o->short_name == c)
			return o;
	fprintf(p->err, "%s: -%c is not an option\n", p->c->prog, c);
	return NULL;
}

static int missing_value(struct parser *p, const struct hvt_option *o)
{
	char name[64];

	spelling(o, name, sizeof(name));
	fprintf(p->err, "%s: %s needs a value (%s)\n", p->c->prog, name, o->arg ? o->arg : "VALUE");
	return BAD_COMMAND_LINE;
}

/* argv[*i] is "--name" or "--name=value"; takes the value from argv[*i + 1] if it needs one there. */
static int parse_long(struct parser *p, int argc, char **argv, int *i)
{
	const char *name = argv[*i] + 2, *eq = strchr(name, '=');
	const struct hvt_option *o = find_long(p, name, eq ? (size_t)(eq - name) : strlen(name));

	if (!o)
		return BAD_COMMAND_LINE;
	if (!takes_value(o)) {
		if (eq) {
			fprintf(p->err, "%s: --%s takes no value\n", p->c->prog, o->long_name);
			return BAD_COMMAND_LINE;
		}
		return set_value(p, o, NULL);
	}
	if (eq)
		return set_value(p, o, eq + 1);
	if (*i + 1 >= argc)
		return missing_value(p, o);
	return set_value(p, o, argv[++*i]);
}

/* argv[*i] is "-abc" (flags) or "-xVALUE" / "-x VALUE". */
static int parse_short(struct parser *p, int argc, char **argv, int *i)
{
	for (const char *s = argv[*i] + 1; *s; s++) {
		const struct hvt_option *o = find_short(p, *s);
		int rc;

		if (!o)
			return BAD_COMMAND_LINE;
		if (!takes_value(o)) {
			if ((rc = set_value(p, o, NULL)))
				return rc;
			continue;
		}
		if (s[1])
			return set_value(p, o, s + 1);
		if (*i + 1 >= argc)
			return missing_value(p, o);
		return set_value(p, o, argv[++*i]);
	}
	return 0;
}

static int parse_operand(struct parser *p, const char *v)
{
	const struct hvt_option *last = NULL;
	size_t k = 0;

	for (const struct hvt_option *o = p->all; o->type != HVT_OPTION_END; o++)
		if (is_operand(o) && k++ == p->next_operand) {
			if (o->type != HVT_OPTION_OPERANDS) /* several stay the current operand */
				p->next_operand++;
			return set_value(p, o, v);
		}
	for (const struct hvt_option *o = p->all; o->type != HVT_OPTION_END; o++)
		if (is_operand(o))
			last = k == 1 ? o : NULL;
	/* Name what is taken already, so that `cmd a.hvt b.hvt` says the command reads one trace. */
	if (last && (last->type == HVT_OPTION_PATH || last->type == HVT_OPTION_STRING) && last->arg)
		fprintf(p->err, "%s: unexpected argument '%s': %s is '%s' already (one %s only)\n",
			p->c->prog, v, last->arg, *(const char *const *)last->value, last->arg);
	else
		fprintf(p->err, "%s: unexpected argument '%s'\n", p->c->prog, v);
	return BAD_VALUE;
}

static int check_required(struct parser *p)
{
	for (const struct hvt_option *o = p->all; o->type != HVT_OPTION_END; o++) {
		char name[64];

		if (!o->required || p->given[o - p->all])
			continue;
		spelling(o, name, sizeof(name));
		if (is_operand(o))
			fprintf(p->err, "%s: %s is required\n", p->c->prog, name);
		else
			fprintf(p->err, "%s: %s%s%s is required\n", p->c->prog, name, o->arg ? " " : "",
				o->arg ? o->arg : "");
		return BAD_VALUE;
	}
	return 0;
}

static const struct hvt_option help_option = HVT_OPT_FLAG('h', "help", (bool *)NULL, "this text");

int hvt_opts_parse_to(const struct hvt_cmdline *c, int argc, char **argv, FILE *out, FILE *err)
{
	struct parser p = {.c = c, .err = err};
	bool only_operands = false;
	size_t n = 0;
	int rc = 0;

	while (c->options[n].type != HVT_OPTION_END)
		n++;
	p.all = calloc(n + 2, sizeof(*p.all));
	p.given = calloc(n + 2, sizeof(*p.given));
	if (!p.all || !p.given) {
		fprintf(err, "%s: out of memory\n", c->prog);
		free(p.all);
		free(p.given);
		return c->usage_status;
	}
	memcpy(p.all, c->options, n * sizeof(*p.all));
	p.all[n] = help_option;
	p.help = &p.all[n];
	/* Arguments in order, as getopt would: an error stops at the first wrong one. */
	for (int i = 1; i < argc && !rc; i++) {
		const char *a = argv[i];

		if (only_operands || a[0] != '-' || !a[1])
			rc = parse_operand(&p, a);
		else if (!strcmp(a, "--"))
			only_operands = true;
		else if (a[1] == '-')
			rc = parse_long(&p, argc, argv, &i);
		else
			rc = parse_short(&p, argc, argv, &i);
	}
	if (!rc)
		rc = check_required(&p);
	free(p.all);
	free(p.given);
	switch (rc) {
	case 0:
		return HVT_OPTS_RUN;
	case HELP_ASKED:
		hvt_opts_usage(c, out);
		return 0;
	case BAD_COMMAND_LINE: /* not just one value: show what the command takes */
		fputc('\n', err);
		hvt_opts_usage(c, err);
		return c->usage_status;
	default:
		return c->usage_status;
	}
}

int hvt_opts_parse(const struct hvt_cmdline *c, int argc, char **argv)
{
	return hvt_opts_parse_to(c, argc, argv, stdout, stderr);
}

/* "  -o, --output FILE" or "      --jsonl FILE|-" or "  TRACE": an entry's left column. */
static int left_column(const struct hvt_option *o, char *buf, size_t len)
{
	const char *a = takes_value(o) && o->arg ? o->arg : NULL;

	if (o->type == HVT_OPTION_OPERANDS)
		return snprintf(buf, len, "  %s...", a ? a : "");
	if (is_operand(o))
		return snprintf(buf, len, "  %s", a ? a : "");
	if (o->short_name && o->long_name)
		return snprintf(buf, len, "  -%c, --%s%s%s", o->short_name, o->long_name, a ? " " : "",
				a ? a : "");
	if (o->short_name)
		return snprintf(buf, len, "  -%c%s%s", o->short_name, a ? " " : "", a ? a : "");
	return snprintf(buf, len, "      --%s%s%s", o->long_name, a ? " " : "", a ? a : "");
}

/* Prints help text at column col, each of its lines after the first indented to the same column. */
static void print_help_text(FILE *f, const char *h, int col)
{
	for (const char *nl; (nl = strchr(h, '\n')); h = nl + 1)
		fprintf(f, "%.*s\n%*s", (int)(nl - h), h, col, "");
	fprintf(f, "%s\n", h);
}

static void print_entry(FILE *f, const struct hvt_option *o, int col)
{
	char left[128];
	int w = left_column(o, left, sizeof(left));

	if (w + 2 > col)
		fprintf(f, "%s\n%*s", left, col, "");
	else
		fprintf(f, "%-*s", col, left);
	print_help_text(f, o->help ? o->help : "", col);
}

/* The operands first, then the options in table order with their headings, then -h. */
static void print_options(const struct hvt_option *opts, FILE *f)
{
	const struct hvt_option *o;
	char left[128];
	int col = left_column(&help_option, left, sizeof(left));

	for (o = opts; o->type != HVT_OPTION_END; o++) {
		int w = o->type == HVT_OPTION_HEADING ? 0 : left_column(o, left, sizeof(left));

		if (w <= HELP_COLUMN_MAX && w > col)
			col = w;
	}
	col += 2;
	for (o = opts; o->type != HVT_OPTION_END; o++)
		if (is_operand(o) && o->help) /* without: more of the one before (top's ENDPOINT...) */
			print_entry(f, o, col);
	for (o = opts; o->type != HVT_OPTION_END; o++)
		if (o->type == HVT_OPTION_HEADING)
			fprintf(f, "%s%s\n", o == opts ? "" : "\n", o->help);
		else if (!is_operand(o))
			print_entry(f, o, col);
	print_entry(f, &help_option, col);
}

void hvt_opts_usage(const struct hvt_cmdline *c, FILE *f)
{
	fprintf(f, "usage: %s %s\n", c->prog, c->synopsis ? c->synopsis : "[options]");
	if (c->about)
		fprintf(f, "\n%s\n", c->about);
	fputc('\n', f);
	print_options(c->options, f);
	if (c->notes)
		fprintf(f, "\n%s\n", c->notes);
	if (c->exits) {
		fprintf(f, "\nExit status:\n");
		for (const struct hvt_exit_status *e = c->exits; e->meaning; e++) {
			fprintf(f, "  %-3d", e->code);
			print_help_text(f, e->meaning, 5);
		}
	}
}
