/* SPDX-License-Identifier: MIT */
/*
 * The text of an SVG picture as <text> elements. cairo's SVG surface draws every glyph as a path, so a
 * reader (a screen reader, a search, a test) finds no word in the file; plot_text hands SVG text here
 * instead of to cairo, and plot_close adds it to the file cairo wrote.
 */
#ifndef TRACER_PLOT_SVG_TEXT_H
#define TRACER_PLOT_SVG_TEXT_H

#include <cairo.h>
#include <stddef.h>

struct svg_text;

struct svg_texts {
	struct svg_text *v;
	size_t n, cap;
	int failed; /* out of memory: the file is refused, not written without its words */
};

/* Records text whose baseline starts at user-space (x, y) of cr, with cr's colour, size, weight and
 * rotation. */
void svg_text_add(struct svg_texts *t, cairo_t *cr, double x, double y, double size, const char *text);
/* Adds the recorded text to the SVG file path (before its closing tag); -1 with errno-style reason. */
int svg_text_write(struct svg_texts *t, const char *path, const char **why);
void svg_text_free(struct svg_texts *t);

#endif
