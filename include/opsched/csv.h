/*
 * opsched/csv.h - one CSV writer (RFC 4180) for every CSV opsched writes.
 *
 * A field with a comma, a double quote, CR or LF is quoted, its quotes
 * doubled; rows end in LF.  The writer knows how many fields a row has:
 * the first row written (the header), or opsched_csv_set_fields when
 * appending to a file that already has one.  A row is kept in memory
 * until opsched_csv_end_row, which writes it only when its field count is
 * the header's: a row with another count is OPSCHED_ERR_INVALID_ARG (on
 * the context, nothing written), so a file never holds a ragged row.
 *
 * Values: text as given (NULL: empty), integers in decimal, doubles with
 * the printf format the caller names; a NaN double is an empty field (not
 * measured, does not apply), an infinite one "inf" or "-inf".
 */
#ifndef OPSCHED_CSV_H
#define OPSCHED_CSV_H

#include <stdint.h>
#include <stdio.h>

#include "opsched/core.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct opsched_csv_writer opsched_csv_writer;

/* A writer over f (borrowed: the caller keeps it open for the writer's
 * life and closes it after opsched_csv_writer_free); errors go to ctx
 * (borrowed).  *out is the caller's, freed with opsched_csv_writer_free. */
opsched_status opsched_csv_writer_create(opsched_ctx *ctx, FILE *f, opsched_csv_writer **out);
/* Frees the writer (a row not ended is dropped); NULL is harmless.  Does
 * not close the file. */
void opsched_csv_writer_free(opsched_csv_writer *w);

/* The header as one comma-separated list of names (names hold no comma,
 * quote or line break): written as the first row, its count becomes every
 * row's.  OPSCHED_ERR_INVALID_ARG after a row was written. */
opsched_status opsched_csv_header(opsched_csv_writer *w, const char *names);
/* Every row has n fields, without writing a header (appending to a file
 * whose header is already there). */
opsched_status opsched_csv_set_fields(opsched_csv_writer *w, int n);

/* One field of the current row. */
opsched_status opsched_csv_str(opsched_csv_writer *w, const char *s);
opsched_status opsched_csv_int(opsched_csv_writer *w, int64_t v);
/* fmt: a printf format of one double ("%.6g"); NaN empty, +-inf "inf". */
opsched_status opsched_csv_double(opsched_csv_writer *w, double v, const char *fmt);
/* An empty field. */
opsched_status opsched_csv_empty(opsched_csv_writer *w);

/* Ends the row: writes it when its field count is right (the first row
 * sets the count when neither a header nor set_fields did).  The row is
 * cleared either way.  OPSCHED_ERR_INVALID_ARG for a wrong count,
 * OPSCHED_ERR_IO when the file cannot be written. */
opsched_status opsched_csv_end_row(opsched_csv_writer *w);

/* Rows written so far, the header included. */
int64_t opsched_csv_rows(const opsched_csv_writer *w);
/* Fields of every row (0 until the first row or set_fields). */
int opsched_csv_fields(const opsched_csv_writer *w);

#ifdef __cplusplus
}
#endif
#endif /* OPSCHED_CSV_H */
