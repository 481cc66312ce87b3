// safetensors: round trips (dtypes, shapes, metadata with escapes, empty
// tensors), files written by Python's json (spaces, other key orders), and
// refusals with a message for every kind of bad header or layout.
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoint/checkpoint.h"
#include "tests/common.h"

static char dir[] = "/tmp/sfst.XXXXXX";

// A file from a header text and data bytes.
static int parse_text(const char *header, const void *data, size_t dlen, sf_st **s, sf_err *e) {
    size_t hl = strlen(header);
    uint8_t *buf = malloc(8 + hl + dlen + 1);
    sf_put_u64(buf, hl);
    memcpy(buf + 8, header, hl);
    if (dlen) memcpy(buf + 8 + hl, data, dlen);
    int rc = sf_st_parse(s, buf, 8 + hl + dlen, "t.safetensors", e);
    free(buf);
    return rc;
}

static void bad(const char *header, size_t dlen, const char *says) {
    static const uint8_t zeros[64];
    sf_st *s = NULL;
    sf_err e = {0};
    int rc = parse_text(header, zeros, dlen, &s, &e);
    CHECK(rc == SF_EFORMAT && strstr(e.msg, says), "'%s': rc %d, '%s', expected a message with '%s'", header, rc,
          e.msg, says);
    sf_st_close(s);
}

int main(void) {
    if (!mkdtemp(dir)) return 2;
    char path[64];
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    float w[6] = {1, -2, 3.5f, 0, 1e-30f, -0.0f};
    double d[2] = {0.1, -1e300};
    int64_t ids[3] = {-1, 0, 1LL << 60};
    sf_st_tensor t[] = {{"lstm/kernel", "F32", 2, {2, 3}, w},
                        {"odd \"name\"\\\n", "F64", 1, {2}, d},
                        {"ids", "I64", 1, {3}, ids},
                        {"empty", "F32", 2, {0, 5}, w},
                        {"scalar", "F32", 0, {0}, w}};
    const char *meta[] = {"model", "lstm:8,dense", "quote\"key", "tab\tvalue", NULL};
    sf_err e = {0};
    CHECK(sf_st_write(path, t, 5, meta, &e) == 0, "write: %s", e.msg);
    sf_st *s;
    if (sf_st_open(&s, path, &e) == 0) {
        CHECK(sf_st_count(s) == 5, "count %zu", sf_st_count(s));
        float got[6];
        CHECK(sf_st_read_f32(s, "lstm/kernel", got, 6, &e) == 0 && memcmp(got, w, sizeof w) == 0, "F32: %s", e.msg);
        const sf_st_entry *x = sf_st_find(s, "odd \"name\"\\\n");
        CHECK(x && x->rank == 1 && x->shape[0] == 2 && memcmp(sf_st_data(s, x), d, sizeof d) == 0, "F64 with an escaped name");
        x = sf_st_find(s, "ids");
        CHECK(x && strcmp(x->dtype, "I64") == 0 && memcmp(sf_st_data(s, x), ids, sizeof ids) == 0, "I64");
        x = sf_st_find(s, "empty");
        CHECK(x && x->begin == x->end && x->shape[1] == 5, "empty tensor");
        x = sf_st_find(s, "scalar");
        CHECK(x && x->rank == 0 && x->end - x->begin == 4, "scalar");
        CHECK(sf_st_meta(s, "model") && strcmp(sf_st_meta(s, "model"), "lstm:8,dense") == 0 &&
                  sf_st_meta(s, "quote\"key") && strcmp(sf_st_meta(s, "quote\"key"), "tab\tvalue") == 0 &&
                  !sf_st_meta(s, "nope"),
              "metadata");
        CHECK(sf_st_read_f32(s, "lstm/kernel", got, 5, &e) == SF_EFORMAT && strstr(e.msg, "expected F32 with 5"),
              "wrong count: %s", e.msg);
        CHECK(sf_st_read_f32(s, "ids", got, 3, &e) == SF_EFORMAT && strstr(e.msg, "is I64"), "wrong dtype: %s", e.msg);
        CHECK(sf_st_read_f32(s, "missing", got, 3, &e) == SF_EFORMAT && strstr(e.msg, "no tensor 'missing'"),
              "missing: %s", e.msg);
        sf_st_close(s);
    } else {
        CHECK(0, "read back: %s", e.msg);
    }
    // As Python's json.dumps writes it: spaces, keys in another order, \u escapes.
    const float two[2] = {1, 2};
    int rc = parse_text("{ \"b\\u00e9\" : { \"shape\" : [ 2 ], \"data_offsets\" : [ 0, 8 ], \"dtype\" : \"F32\" }, "
                        "\"__metadata__\" : { \"k\" : \"\\ud83d\\ude00\" } }  ", two, 8, &s, &e);
    CHECK(rc == 0, "python style: %s", e.msg);
    if (rc == 0) {
        CHECK(sf_st_find(s, "b\xc3\xa9") != NULL, "\\u00e9 as UTF-8");
        CHECK(sf_st_meta(s, "k") && strcmp(sf_st_meta(s, "k"), "\xf0\x9f\x98\x80") == 0, "surrogate pair as UTF-8");
        sf_st_close(s);
    }
    uint8_t tiny[4] = {0};
    CHECK(sf_st_parse(&s, tiny, 4, "t", &e) == SF_EFORMAT && strstr(e.msg, "too short"), "4 bytes: %s", e.msg);
    uint8_t huge[16] = {0xff, 0xff, 0, 0, 0, 0, 0, 0};
    CHECK(sf_st_parse(&s, huge, 16, "t", &e) == SF_EFORMAT && strstr(e.msg, "does not fit"), "length: %s", e.msg);
    {  // a string longer than the reader keeps: the limit named
        char header[1200];
        snprintf(header, sizeof header, "{\"__metadata__\":{\"%01100d\":\"v\"}}", 0);
        bad(header, 0, "expected a string of at most 1023 bytes");
    }
    bad("[]", 0, "byte 8: expected '{'");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4, "',' or '}'");
    bad("{\"a\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "a known dtype");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4, "need 8");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "starts at data byte 4, expected 0");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "expected 4");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 12, "cover 4 data bytes, the file has 12");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "lacks dtype, shape or data_offsets");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
        "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "'a' twice");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "at most 4 dimensions");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4, "non-negative integer");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,4]}}", 4, "smaller integer");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296,16],\"data_offsets\":[0,4]}}", 4, "smaller shape");
    bad("{\"a\x01\":{}}", 0, "no control characters");
    bad("{\"a\\x\":{}}", 0, "a valid escape");
    bad("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":[1,{\"y\":nul}]}}", 4, "a value");
    bad("{} x", 0, "the end of the header");
    bad("{}", 4, "4 data bytes but no tensors");
    bad("{\"__metadata__\":{\"k\":1}}", 0, "a string");
    // Unknown keys of any shape are skipped.
    rc = parse_text("{\"a\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1],\"x\":[1.5e3,-2,true,false,null,"
                    "{\"y\":[]},\"z\"]}}", tiny, 1, &s, &e);
    CHECK(rc == 0, "unknown keys: %s", e.msg);
    if (rc == 0) sf_st_close(s);
    // Nothing is left behind when the directory cannot take the file.
    snprintf(path, sizeof path, "%s/missing/a.safetensors", dir);
    CHECK(sf_st_write(path, t, 1, NULL, &e) == SF_EIO, "write into a missing directory");
    snprintf(path, sizeof path, "%s/a.safetensors", dir);
    unlink(path);
    rmdir(dir);
    return TEST_EXIT();
}
