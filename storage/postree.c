/*
 * postree.c - the B+ tree of (position, pointer) pairs (postree.h).
 *
 * Leaves hold up to LCAP sorted pairs and a link to the next leaf; inner
 * nodes hold up to ICAP children and the separators between them:
 * sep[i] is no greater than every pair of child[i + 1] and greater than
 * every pair of child[i].  A removal never updates a separator (the old one
 * still bounds what is left), so only borrowing and merging touch them.
 *
 * Insert: descend, insert in the leaf; a full leaf first gives pairs to a
 * sibling with room (shift_to_sibling), else it splits, and full nodes
 * split on the way back up (the nodes a split can need are allocated before
 * anything changes, so an allocation failure leaves the tree as it was).  Remove: descend, remove,
 * and while a node is under a quarter full borrow a pair (a child) from a
 * sibling that can spare one, else merge with it; a root with one child
 * gives way to it.  The quarter (not half) keeps a tree that shrinks from
 * bouncing between merge and split while still bounding its memory to four
 * times the pairs' at worst (about 1.4 times after random inserts).
 */
#include "storage/postree.h"

#include <stdlib.h>
#include <string.h>

#include "proto/hkv.h"

#define LCAP POSTREE_FANOUT
#define ICAP 62                 /* children of an inner node */
#define LMIN (LCAP / 4)
#define IMIN (ICAP / 4)
#define MAX_DEPTH 24            /* ICAP/4 = 15 children a level: 15^24 pairs */

struct pair {
    uint64_t pos;
    uintptr_t p;
};

struct node {                   /* the header both kinds start with */
    uint16_t n;                 /* leaf: pairs; inner: children */
    uint8_t leaf;
};

struct leaf {
    struct node h;
    struct leaf *next;
    struct pair kv[LCAP];
};

struct inner {
    struct node h;
    struct pair sep[ICAP - 1];
    struct node *child[ICAP];
};

struct postree {
    struct node *root;
    size_t count;
    int depth;                  /* inner levels above the leaves */
    uint64_t bytes;
    uint64_t *counter;          /* the owner's memory figure, or NULL */
};

static int cmp(uint64_t pos, uintptr_t p, const struct pair *b)
{
    if (pos != b->pos)
        return pos < b->pos ? -1 : 1;
    return p < b->p ? -1 : p > b->p ? 1 : 0;
}

/* The first index in a[0..n) whose pair is >= (pos, p). */
static int lower(const struct pair *a, int n, uint64_t pos, uintptr_t p)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cmp(pos, p, &a[mid]) > 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The child of inner node x that holds (pos, p): how many separators are
 * <= it. */
static int child_of(const struct inner *x, uint64_t pos, uintptr_t p)
{
    int lo = 0, hi = x->h.n - 1;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (cmp(pos, p, &x->sep[mid]) >= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void *node_alloc(struct postree *t, int leaf)
{
    size_t sz = leaf ? sizeof(struct leaf) : sizeof(struct inner);
    struct node *x = malloc(sz);
    if (x == NULL)
        return NULL;
    x->n = 0;
    x->leaf = (uint8_t)leaf;
    if (leaf)
        ((struct leaf *)x)->next = NULL;
    t->bytes += sz;
    if (t->counter != NULL)
        *t->counter += sz;
    return x;
}

static void node_free(struct postree *t, struct node *x)
{
    size_t sz = x->leaf ? sizeof(struct leaf) : sizeof(struct inner);
    t->bytes -= sz;
    if (t->counter != NULL)
        *t->counter -= sz;
    free(x);
}

struct postree *postree_create(uint64_t *bytes)
{
    struct postree *t = calloc(1, sizeof(*t));
    if (t == NULL)
        return NULL;
    t->counter = bytes;
    t->root = node_alloc(t, 1);
    if (t->root == NULL) {
        free(t);
        return NULL;
    }
    return t;
}

static void free_all(struct postree *t, struct node *x)
{
    if (!x->leaf) {
        struct inner *in = (struct inner *)x;
        for (int i = 0; i < in->h.n; i++)
            free_all(t, in->child[i]);
    }
    node_free(t, x);
}

void postree_destroy(struct postree **tp)
{
    if (tp == NULL || *tp == NULL)
        return;
    free_all(*tp, (*tp)->root);
    free(*tp);
    *tp = NULL;
}

size_t postree_count(const struct postree *t) { return t->count; }
uint64_t postree_bytes(const struct postree *t) { return t->bytes; }

/* ---- insert ---------------------------------------------------------------- */

/* Puts (sep, right) into inner x after child i. */
static void inner_put(struct inner *x, int i, struct pair sep, struct node *right)
{
    int n = x->h.n;
    memmove(&x->sep[i + 1], &x->sep[i], (size_t)(n - 1 - i) * sizeof(x->sep[0]));
    memmove(&x->child[i + 2], &x->child[i + 1], (size_t)(n - 1 - i) * sizeof(x->child[0]));
    x->sep[i] = sep;
    x->child[i + 1] = right;
    x->h.n++;
}

/* Inserts (pos, p) into a leaf that holds it sorted (room for one more). */
static void leaf_put(struct leaf *lf, uint64_t pos, uintptr_t p)
{
    int j = lower(lf->kv, lf->h.n, pos, p);
    memmove(&lf->kv[j + 1], &lf->kv[j], (size_t)(lf->h.n - j) * sizeof(lf->kv[0]));
    lf->kv[j] = (struct pair){pos, p};
    lf->h.n++;
}

/* Child i of parent is a full leaf that (pos, p) belongs in: before it is
 * split, half the room a sibling under the same parent has is filled from
 * it (its last pairs to the right sibling, or its first to the left one,
 * with the separator between them moved to match), and the pair goes to
 * whichever of the two now covers it.  A B*-tree's deferred split: leaves
 * fill to ~80% instead of ~70% under random inserts, a quarter less of the
 * tree's memory per key.  1 if it did, 0 if neither sibling has room for
 * two or more (then the caller splits). */
static int shift_to_sibling(struct inner *parent, int i, uint64_t pos, uintptr_t p)
{
    struct leaf *lf = (struct leaf *)parent->child[i];
    if (i + 1 < parent->h.n) {
        struct leaf *r = (struct leaf *)parent->child[i + 1];
        int k = (LCAP - r->h.n) / 2;
        if (k >= 1) {
            memmove(&r->kv[k], &r->kv[0], (size_t)r->h.n * sizeof(r->kv[0]));
            memcpy(&r->kv[0], &lf->kv[LCAP - k], (size_t)k * sizeof(r->kv[0]));
            r->h.n = (uint16_t)(r->h.n + k);
            lf->h.n = (uint16_t)(LCAP - k);
            parent->sep[i] = r->kv[0];
            leaf_put(cmp(pos, p, &parent->sep[i]) >= 0 ? r : lf, pos, p);
            return 1;
        }
    }
    if (i > 0) {
        struct leaf *l = (struct leaf *)parent->child[i - 1];
        int k = (LCAP - l->h.n) / 2;
        if (k >= 1) {
            memcpy(&l->kv[l->h.n], &lf->kv[0], (size_t)k * sizeof(l->kv[0]));
            l->h.n = (uint16_t)(l->h.n + k);
            memmove(&lf->kv[0], &lf->kv[k], (size_t)(LCAP - k) * sizeof(lf->kv[0]));
            lf->h.n = (uint16_t)(LCAP - k);
            parent->sep[i - 1] = lf->kv[0];
            leaf_put(cmp(pos, p, &parent->sep[i - 1]) < 0 ? l : lf, pos, p);
            return 1;
        }
    }
    return 0;
}

int postree_insert(struct postree *t, uint64_t pos, void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    struct inner *path[MAX_DEPTH];
    int idx[MAX_DEPTH], d = 0;
    struct node *x = t->root;
    while (!x->leaf) {
        struct inner *in = (struct inner *)x;
        int i = child_of(in, pos, p);
        path[d] = in;
        idx[d++] = i;
        x = in->child[i];
    }
    struct leaf *lf = (struct leaf *)x;
    int j = lower(lf->kv, lf->h.n, pos, p);
    if (j < lf->h.n && cmp(pos, p, &lf->kv[j]) == 0)
        return HKV_EEXIST;
    if (lf->h.n < LCAP) {
        memmove(&lf->kv[j + 1], &lf->kv[j], (size_t)(lf->h.n - j) * sizeof(lf->kv[0]));
        lf->kv[j] = (struct pair){pos, p};
        lf->h.n++;
        t->count++;
        return HKV_OK;
    }

    if (d > 0 && shift_to_sibling(path[d - 1], idx[d - 1], pos, p)) {
        t->count++;
        return HKV_OK;
    }

    /* Nodes the splits need, before anything changes: the leaf's new
     * half, one per full ancestor in a row above it, and a new root if
     * they reach the top. */
    struct node *spare[MAX_DEPTH + 2];
    int need = 1, k = d - 1;
    while (k >= 0 && path[k]->h.n == ICAP) {
        need++;
        k--;
    }
    int new_root = k < 0;
    if (d + 1 >= MAX_DEPTH)
        return HKV_ENOMEM; /* cannot happen below 15^MAX_DEPTH pairs */
    for (int s = 0; s < need + new_root; s++) {
        spare[s] = node_alloc(t, s == 0);
        if (spare[s] == NULL) {
            while (s-- > 0)
                node_free(t, spare[s]);
            return HKV_ENOMEM;
        }
    }
    int used = 0;

    /* the leaf: LCAP + 1 pairs, the lower half stays */
    struct pair all[LCAP + 1];
    memcpy(all, lf->kv, (size_t)j * sizeof(all[0]));
    all[j] = (struct pair){pos, p};
    memcpy(&all[j + 1], &lf->kv[j], (size_t)(LCAP - j) * sizeof(all[0]));
    struct leaf *r = (struct leaf *)spare[used++];
    int h = (LCAP + 1) / 2;
    memcpy(lf->kv, all, (size_t)h * sizeof(all[0]));
    lf->h.n = (uint16_t)h;
    memcpy(r->kv, &all[h], (size_t)(LCAP + 1 - h) * sizeof(all[0]));
    r->h.n = (uint16_t)(LCAP + 1 - h);
    r->next = lf->next;
    lf->next = r;
    t->count++;

    struct pair sep = r->kv[0];
    struct node *right = &r->h;
    for (k = d - 1; k >= 0; k--) {
        struct inner *in = path[k];
        if (in->h.n < ICAP) {
            inner_put(in, idx[k], sep, right);
            return HKV_OK;
        }
        /* full: ICAP + 1 children and ICAP separators, split in two */
        struct pair seps[ICAP];
        struct node *kids[ICAP + 1];
        int i = idx[k];
        memcpy(seps, in->sep, (size_t)i * sizeof(seps[0]));
        seps[i] = sep;
        memcpy(&seps[i + 1], &in->sep[i], (size_t)(ICAP - 1 - i) * sizeof(seps[0]));
        memcpy(kids, in->child, (size_t)(i + 1) * sizeof(kids[0]));
        kids[i + 1] = right;
        memcpy(&kids[i + 2], &in->child[i + 1], (size_t)(ICAP - 1 - i) * sizeof(kids[0]));
        struct inner *rn = (struct inner *)spare[used++];
        int hl = (ICAP + 1) / 2; /* children that stay */
        memcpy(in->child, kids, (size_t)hl * sizeof(kids[0]));
        memcpy(in->sep, seps, (size_t)(hl - 1) * sizeof(seps[0]));
        in->h.n = (uint16_t)hl;
        memcpy(rn->child, &kids[hl], (size_t)(ICAP + 1 - hl) * sizeof(kids[0]));
        memcpy(rn->sep, &seps[hl], (size_t)(ICAP - hl) * sizeof(seps[0]));
        rn->h.n = (uint16_t)(ICAP + 1 - hl);
        sep = seps[hl - 1];
        right = &rn->h;
    }
    struct inner *root = (struct inner *)spare[used++];
    root->child[0] = t->root;
    root->child[1] = right;
    root->sep[0] = sep;
    root->h.n = 2;
    t->root = &root->h;
    t->depth++;
    return HKV_OK;
}

/* ---- remove ---------------------------------------------------------------- */

/* Child i of parent is under its minimum: borrow from or merge with a
 * sibling.  Returns 1 if parent lost a child (a merge). */
static int fix_leaf(struct postree *t, struct inner *parent, int i)
{
    struct leaf *x = (struct leaf *)parent->child[i];
    if (i > 0) {
        struct leaf *l = (struct leaf *)parent->child[i - 1];
        if (l->h.n > LMIN) {
            memmove(&x->kv[1], &x->kv[0], (size_t)x->h.n * sizeof(x->kv[0]));
            x->kv[0] = l->kv[--l->h.n];
            x->h.n++;
            parent->sep[i - 1] = x->kv[0];
            return 0;
        }
        memcpy(&l->kv[l->h.n], x->kv, (size_t)x->h.n * sizeof(x->kv[0]));
        l->h.n = (uint16_t)(l->h.n + x->h.n);
        l->next = x->next;
        node_free(t, &x->h);
        i--; /* sep[i] and child[i + 1] go */
    } else {
        struct leaf *r = (struct leaf *)parent->child[1];
        if (r->h.n > LMIN) {
            x->kv[x->h.n++] = r->kv[0];
            memmove(&r->kv[0], &r->kv[1], (size_t)(--r->h.n) * sizeof(r->kv[0]));
            parent->sep[0] = r->kv[0];
            return 0;
        }
        memcpy(&x->kv[x->h.n], r->kv, (size_t)r->h.n * sizeof(r->kv[0]));
        x->h.n = (uint16_t)(x->h.n + r->h.n);
        x->next = r->next;
        node_free(t, &r->h);
    }
    int n = parent->h.n;
    memmove(&parent->sep[i], &parent->sep[i + 1], (size_t)(n - 2 - i) * sizeof(parent->sep[0]));
    memmove(&parent->child[i + 1], &parent->child[i + 2],
            (size_t)(n - 2 - i) * sizeof(parent->child[0]));
    parent->h.n--;
    return 1;
}

static int fix_inner(struct postree *t, struct inner *parent, int i)
{
    struct inner *x = (struct inner *)parent->child[i];
    if (i > 0) {
        struct inner *l = (struct inner *)parent->child[i - 1];
        if (l->h.n > IMIN) {
            memmove(&x->child[1], &x->child[0], (size_t)x->h.n * sizeof(x->child[0]));
            memmove(&x->sep[1], &x->sep[0], (size_t)(x->h.n - 1) * sizeof(x->sep[0]));
            x->child[0] = l->child[l->h.n - 1];
            x->sep[0] = parent->sep[i - 1];
            parent->sep[i - 1] = l->sep[l->h.n - 2];
            l->h.n--;
            x->h.n++;
            return 0;
        }
        l->sep[l->h.n - 1] = parent->sep[i - 1];
        memcpy(&l->sep[l->h.n], x->sep, (size_t)(x->h.n - 1) * sizeof(x->sep[0]));
        memcpy(&l->child[l->h.n], x->child, (size_t)x->h.n * sizeof(x->child[0]));
        l->h.n = (uint16_t)(l->h.n + x->h.n);
        node_free(t, &x->h);
        i--;
    } else {
        struct inner *r = (struct inner *)parent->child[1];
        if (r->h.n > IMIN) {
            x->child[x->h.n] = r->child[0];
            x->sep[x->h.n - 1] = parent->sep[0];
            x->h.n++;
            parent->sep[0] = r->sep[0];
            memmove(&r->child[0], &r->child[1], (size_t)(r->h.n - 1) * sizeof(r->child[0]));
            memmove(&r->sep[0], &r->sep[1], (size_t)(r->h.n - 2) * sizeof(r->sep[0]));
            r->h.n--;
            return 0;
        }
        x->sep[x->h.n - 1] = parent->sep[0];
        memcpy(&x->sep[x->h.n], r->sep, (size_t)(r->h.n - 1) * sizeof(r->sep[0]));
        memcpy(&x->child[x->h.n], r->child, (size_t)r->h.n * sizeof(r->child[0]));
        x->h.n = (uint16_t)(x->h.n + r->h.n);
        node_free(t, &r->h);
    }
    int n = parent->h.n;
    memmove(&parent->sep[i], &parent->sep[i + 1], (size_t)(n - 2 - i) * sizeof(parent->sep[0]));
    memmove(&parent->child[i + 1], &parent->child[i + 2],
            (size_t)(n - 2 - i) * sizeof(parent->child[0]));
    parent->h.n--;
    return 1;
}

int postree_remove(struct postree *t, uint64_t pos, void *ptr)
{
    uintptr_t p = (uintptr_t)ptr;
    struct inner *path[MAX_DEPTH];
    int idx[MAX_DEPTH], d = 0;
    struct node *x = t->root;
    while (!x->leaf) {
        struct inner *in = (struct inner *)x;
        int i = child_of(in, pos, p);
        path[d] = in;
        idx[d++] = i;
        x = in->child[i];
    }
    struct leaf *lf = (struct leaf *)x;
    int j = lower(lf->kv, lf->h.n, pos, p);
    if (j == lf->h.n || cmp(pos, p, &lf->kv[j]) != 0)
        return 0;
    memmove(&lf->kv[j], &lf->kv[j + 1], (size_t)(lf->h.n - 1 - j) * sizeof(lf->kv[0]));
    lf->h.n--;
    t->count--;
    for (int k = d - 1; k >= 0; k--) {
        struct node *c = path[k]->child[idx[k]];
        if (c->n >= (c->leaf ? LMIN : IMIN))
            break;
        if (!(c->leaf ? fix_leaf(t, path[k], idx[k]) : fix_inner(t, path[k], idx[k])))
            break; /* borrowed: the parent kept its children */
    }
    while (!t->root->leaf && t->root->n == 1) {
        struct node *old = t->root;
        t->root = ((struct inner *)old)->child[0];
        node_free(t, old);
        t->depth--;
    }
    return 1;
}

/* ---- walks ----------------------------------------------------------------- */

int postree_seek(const struct postree *t, uint64_t pos, struct postree_iter *it)
{
    const struct node *x = t->root;
    while (!x->leaf) {
        const struct inner *in = (const struct inner *)x;
        x = in->child[child_of(in, pos, 0)];
    }
    const struct leaf *lf = (const struct leaf *)x;
    it->leaf = lf;
    it->i = lower(lf->kv, lf->h.n, pos, 0);
    if (it->i == lf->h.n) {
        it->leaf = lf->next;
        it->i = 0;
    }
    return it->leaf != NULL && ((const struct leaf *)it->leaf)->h.n > it->i;
}

int postree_get(const struct postree_iter *it, uint64_t *pos, void **p)
{
    const struct leaf *lf = it->leaf;
    if (lf == NULL || it->i >= lf->h.n)
        return 0;
    *pos = lf->kv[it->i].pos;
    *p = (void *)lf->kv[it->i].p;
    return 1;
}

void postree_next(struct postree_iter *it)
{
    const struct leaf *lf = it->leaf;
    if (lf == NULL)
        return;
    if (++it->i >= lf->h.n) {
        it->leaf = lf->next;
        it->i = 0;
    }
}

/* ---- the invariants, for tests -------------------------------------------------- */

struct chk {
    size_t pairs;
    uint64_t bytes;
    const struct leaf *prev;    /* the leaf before, in key order */
    const struct leaf *first;
    int leaf_depth;
};

/* Pairs of x are >= lo (if lo) and < hi (if hi). */
static int check_node(const struct postree *t, const struct node *x, const struct pair *lo,
                      const struct pair *hi, int depth, struct chk *c)
{
    int root = x == t->root;
    if (x->leaf) {
        const struct leaf *lf = (const struct leaf *)x;
        c->bytes += sizeof(*lf);
        if (lf->h.n > LCAP || (!root && lf->h.n < LMIN))
            return 1;
        if (c->leaf_depth < 0)
            c->leaf_depth = depth;
        if (depth != c->leaf_depth)
            return 2;
        for (int i = 0; i < lf->h.n; i++) {
            if (i > 0 && cmp(lf->kv[i].pos, lf->kv[i].p, &lf->kv[i - 1]) <= 0)
                return 3;
            if ((lo && cmp(lf->kv[i].pos, lf->kv[i].p, lo) < 0) ||
                (hi && cmp(lf->kv[i].pos, lf->kv[i].p, hi) >= 0))
                return 4;
        }
        if (c->prev != NULL && c->prev->next != lf)
            return 5;
        if (c->prev == NULL)
            c->first = lf;
        c->prev = lf;
        c->pairs += lf->h.n;
        return 0;
    }
    const struct inner *in = (const struct inner *)x;
    c->bytes += sizeof(*in);
    if (in->h.n > ICAP || in->h.n < (root ? 2 : IMIN))
        return 6;
    for (int i = 0; i + 1 < in->h.n - 1; i++)
        if (cmp(in->sep[i + 1].pos, in->sep[i + 1].p, &in->sep[i]) <= 0)
            return 7;
    for (int i = 0; i < in->h.n; i++) {
        int rc = check_node(t, in->child[i], i > 0 ? &in->sep[i - 1] : lo,
                            i < in->h.n - 1 ? &in->sep[i] : hi, depth + 1, c);
        if (rc != 0)
            return rc;
    }
    return 0;
}

int postree_check(const struct postree *t)
{
    struct chk c = {0, 0, NULL, NULL, -1};
    int rc = check_node(t, t->root, NULL, NULL, 0, &c);
    if (rc != 0)
        return rc;
    if (c.prev != NULL && c.prev->next != NULL)
        return 8;
    if (c.pairs != t->count)
        return 9;
    if (c.bytes != t->bytes)
        return 10;
    if (c.leaf_depth != t->depth)
        return 11;
    return 0;
}
