/* A W&B history record as one JSON object line, as the Python reader writes it. */

#ifndef WANDBWALK_LINE_H
#define WANDBWALK_LINE_H

#include <stddef.h>
#include <stdint.h>

#include "ranks.h"

/* one history item: its key and value (in the record), the key's rank */
typedef struct {
    const unsigned char *key, *value;
    size_t klen, vlen;
    uint32_t rank;
} Item;

/* what writing lines keeps between records: the keys' ranks (those below confirmed given by Walker.order: keys the
 * rows have shown), one record's items, and its items by rank (1 + the item's index; 0: none) */
typedef struct {
    Ranks ranks;
    uint32_t confirmed;
    Item *items;
    size_t items_cap;
    uint32_t *at;
    size_t at_cap;
} Lines;

/* A HistoryRecord at [p, end) of the layout the Python reader writes as it is (wandbwire.history_line), written at
 * out as `{"key":value,...}\n`: each item a key (one nested_key part, field 2) then value_json (field 16) and
 * nothing else, both as a line takes them (line.c), then at most the step (field 2, HistoryStep{num}) and, after a
 * step, _info (field 200). The reader reads any other record item by item, a value holding `/_type":` included, and
 * writes it otherwise (its keys through json.dumps, its clock kept otherwise). A key ending in `/_type` names a
 * media value (a wandb.Table, an image), whose cells the Python reader leaves out.
 * The keys come in the order of their ranks below `confirmed` (given by Walker.order: the JSON decoder's order;
 * wandb writes each record's items in a new order, and one order lets the decoder find each key where it looks
 * first), or in the record's order where it holds a key not ranked below `confirmed` (a key the rows may not have
 * shown yet: the store's columns come in the order the rows first show them, and a line the JSON decoder refuses
 * shows none; the decoder has no field for the key either).
 * Returns the bytes written; 0 for any other record, a key twice in it included (what was written then does not
 * count). out has room for end - p + 2 bytes: each item takes at least 7 bytes of tags and lengths beside its key
 * and value, and 4 in the line. */
size_t ww_history_line(Lines *lines, const unsigned char *p, const unsigned char *end, char *out);

/* forget the ranks and free the memory */
void ww_lines_free(Lines *lines);

#endif
