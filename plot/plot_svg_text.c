// SPDX-License-Identifier: MIT
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot_svg_text.h"

struct svg_text {
	double x, y, size, angle; /* device space; angle in degrees */
	double r, g, b;
	int bold;
	char *text;
};

void svg_text_add(struct svg_texts *t, cairo_t *cr, double x, double y, double size, const char *text)
{
	struct svg_text *e;
	cairo_matrix_t m;
	double r = 0, g = 0, b = 0, alpha;

	if (t->n == t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct svg_text *v = realloc(t->v, cap * sizeof(*v));

		if (!v) {
			t->failed = 1;
			return;
		}
		t->v = v;
		t->cap = cap;
	}
	e = &t->v[t->n];
	cairo_get_matrix(cr, &m);
	cairo_user_to_device(cr, &x, &y);
	cairo_pattern_get_rgba(cairo_get_source(cr), &r, &g, &b, &alpha);
	*e = (struct svg_text){.x = x,
			       .y = y,
			       .size = size,
			       .angle = atan2(m.yx, m.xx) * 180 / M_PI,
			       .r = r,
			       .g = g,
			       .b = b,
			       .bold = cairo_toy_font_face_get_weight(cairo_get_font_face(cr)) ==
				       CAIRO_FONT_WEIGHT_BOLD,
			       .text = strdup(text)};
	if (!e->text)
		t->failed = 1;
	else
		t->n++;
}

/* Text content as XML allows it: markup escaped, control characters (a VM name may hold any) as '?'. */
static void escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '<')
			fputs("&lt;", f);
		else if (*s == '>')
			fputs("&gt;", f);
		else if (*s == '&')
			fputs("&amp;", f);
		else if ((unsigned char)*s < 0x20)
			fputc('?', f);
		else
			fputc(*s, f);
	}
}

int svg_text_write(struct svg_texts *t, const char *path, const char **why)
{
	FILE *f = fopen(path, "r+e");
	char *body = NULL, *end;
	long len;

	*why = "cannot reopen the SVG";
	if (t->failed) {
		*why = "out of memory for the picture's text";
		goto fail;
	}
	if (!f || fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
		goto fail;
	body = malloc(len + 1);
	if (!body || fread(body, 1, len, f) != (size_t)len)
		goto fail;
	body[len] = '\0';
	end = strstr(body, "</svg>");
	for (char *next; end && (next = strstr(end + 1, "</svg>"));)
		end = next;
	*why = "cairo wrote no closing </svg>";
	if (!end || fseek(f, end - body, SEEK_SET))
		goto fail;
	fputs("<g font-family=\"DejaVu Sans, sans-serif\">\n", f);
	for (size_t i = 0; i < t->n; i++) {
		const struct svg_text *e = &t->v[i];

		fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.1f\"%s fill=\"#%02x%02x%02x\"", e->x,
			e->y, e->size, e->bold ? " font-weight=\"bold\"" : "", (unsigned)lround(e->r * 255),
			(unsigned)lround(e->g * 255), (unsigned)lround(e->b * 255));
		if (fabs(e->angle) > 0.01)
			fprintf(f, " transform=\"rotate(%.1f %.1f %.1f)\"", e->angle, e->x, e->y);
		fputc('>', f);
		escaped(f, e->text);
		fputs("</text>\n", f);
	}
	fputs("</g>\n", f);
	fputs(end, f);
	free(body);
	*why = "writing the SVG's text failed";
	return fclose(f) ? -1 : 0;
fail:
	free(body);
	if (f)
		fclose(f);
	return -1;
}

void svg_text_free(struct svg_texts *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->v[i].text);
	free(t->v);
	*t = (struct svg_texts){0};
}
