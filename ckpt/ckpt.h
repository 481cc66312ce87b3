// ckpt: safetensors files (https://github.com/huggingface/safetensors): an
// 8-byte little-endian header length, a JSON header naming each tensor's
// dtype, shape and byte range, then the data. seqfeed's checkpoints and the
// test fixtures use it, so Keras, PyTorch and numpy read them directly.
#ifndef SF_CKPT_H
#define SF_CKPT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/common.h"

enum { SF_ST_MAX_RANK = 4 };

typedef struct {
    char name[128];
    char dtype[8];  // "F32", "F64", "I64", "U8", ...
    uint32_t rank;
    uint64_t shape[SF_ST_MAX_RANK];
    uint64_t begin, end;  // byte range in the data section
} sf_st_entry;

// A file read whole into memory (checkpoints are megabytes) and validated:
// header JSON, dtypes, shapes against byte ranges, ranges inside the data
// and covering it without overlap, as the format requires.
typedef struct sf_st sf_st;
int sf_st_open(sf_st **out, const char *path, sf_err *e);
// The same from memory (data is copied); name is used in messages.
int sf_st_parse(sf_st **out, const void *data, size_t len, const char *name, sf_err *e);
void sf_st_close(sf_st *s);
size_t sf_st_count(const sf_st *s);
const sf_st_entry *sf_st_entry_at(const sf_st *s, size_t i);
const sf_st_entry *sf_st_find(const sf_st *s, const char *name);
const void *sf_st_data(const sf_st *s, const sf_st_entry *t);
// Copies tensor name, which must be F32 with count elements, into out.
int sf_st_read_f32(const sf_st *s, const char *name, float *out, size_t count, sf_err *e);
// A value of the header's __metadata__ (strings only), or NULL.
const char *sf_st_meta(const sf_st *s, const char *key);

typedef struct {
    const char *name, *dtype;
    uint32_t rank;
    uint64_t shape[SF_ST_MAX_RANK];
    const void *data;
} sf_st_tensor;
// Writes n tensors and the metadata pairs meta[0], meta[1], ... (NULL
// terminated, may be NULL) to path atomically: a temporary file, fsync,
// rename. Tensors are laid out in the order given.
int sf_st_write(const char *path, const sf_st_tensor *t, size_t n, const char *const *meta, sf_err *e);

#endif
