/*
 * models.c - learned models on disk, next to the database:
 *
 *   <db>.models/<base>.meta.json            what was trained on what (cJSON)
 *   <base>.m<i>-<count>-<max id>.xgb.json   XGBoost's JSON model of model i
 *
 * where <base> is d<device id>-<math>-<layout>-<policy>-<cache>, plus
 * -x-<name>-<hash> for models trained without an exclusion's
 * configurations.  The metadata holds the data fingerprint, the
 * calibration's time, the feature version and the exclusion: when any
 * differs from the database now, the models are stale.  Files are written
 * under a temporary name and renamed, so a reader never sees half a file.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "core/util.h"
#include "predict/predict_impl.h"

void os_predict_paths(const opsched_predictor *p, char *meta, size_t meta_size, char *base,
                      size_t base_size)
{
    char name[256];
    snprintf(name, sizeof(name), "d%lld-%s-%s-%s-%s%s%s", (long long)p->info.device.id, p->math,
             p->layout, p->algo_policy, p->cache, p->tag[0] ? "-x-" : "", p->tag);
    for (char *c = name; *c; c++)
        if (*c == '/' || *c == ' ') *c = '_';
    if (base) snprintf(base, base_size, "%s", name);
    if (meta) snprintf(meta, meta_size, "%s/%s.meta.json", p->models_dir, name);
}

/* ---- saving ------------------------------------------------------------------ */

static cJSON *cv_json(const opsched_cv_error *e)
{
    cJSON *o = cJSON_CreateObject();
    if (!o) return NULL;
    cJSON_AddNumberToObject(o, "n", (double)e->n);
    /* NaN has no JSON spelling: absent values are null. */
    const char *names[] = {"median_ape", "p90_ape", "max_ape", "within10"};
    const double vals[] = {e->median_ape, e->p90_ape, e->max_ape, e->within10};
    for (int i = 0; i < 4; i++) {
        if (isfinite(vals[i]))
            cJSON_AddNumberToObject(o, names[i], vals[i]);
        else
            cJSON_AddNullToObject(o, names[i]);
    }
    return o;
}

static void add_num_or_null(cJSON *o, const char *name, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(o, name, v);
    else
        cJSON_AddNullToObject(o, name);
}

static cJSON *meta_json(const opsched_predictor *p)
{
    const opsched_predictor_info *in = &p->info;
    cJSON *root = cJSON_CreateObject();
    if (!root) return NULL;
    cJSON_AddNumberToObject(root, "format", OS_MODEL_FORMAT);
    cJSON_AddNumberToObject(root, "feature_version", OS_FEATURE_VERSION);
    cJSON_AddStringToObject(root, "opsched", opsched_version());
    cJSON *dev = cJSON_AddObjectToObject(root, "device");
    if (dev) {
        cJSON_AddNumberToObject(dev, "id", (double)in->device.id);
        cJSON_AddStringToObject(dev, "backend", in->device.backend);
        cJSON_AddStringToObject(dev, "name", in->device.name);
        cJSON_AddStringToObject(dev, "uuid", in->device.uuid);
        cJSON_AddNumberToObject(dev, "sm_count", in->device.sm_count);
    }
    cJSON_AddStringToObject(root, "math", p->math);
    cJSON_AddStringToObject(root, "layout", p->layout);
    cJSON_AddStringToObject(root, "algo_policy", p->algo_policy);
    cJSON_AddStringToObject(root, "cache", p->cache);
    cJSON *fp = cJSON_AddObjectToObject(root, "fingerprint");
    if (fp) {
        cJSON_AddNumberToObject(fp, "count", (double)in->fingerprint.count);
        cJSON_AddNumberToObject(fp, "max_id", (double)in->fingerprint.max_id);
        cJSON_AddNumberToObject(fp, "max_created_at", in->fingerprint.max_created_at);
    }
    add_num_or_null(root, "calibration_created_at",
                    in->has_calibration ? in->calibration.created_at : NAN);
    if (p->tag[0]) {
        cJSON *x = cJSON_AddObjectToObject(root, "exclusion");
        char hash[24];
        snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)p->excl_hash);
        if (x) {
            cJSON_AddStringToObject(x, "tag", p->tag);
            cJSON_AddStringToObject(x, "hash", hash);
            cJSON_AddNumberToObject(x, "signatures", (double)p->excl_count);
            cJSON_AddNumberToObject(x, "rows_left_out", (double)in->excluded_rows);
        }
    } else {
        cJSON_AddNullToObject(root, "exclusion");
    }
    cJSON *prm = cJSON_AddObjectToObject(root, "params");
    if (prm) {
        cJSON_AddNumberToObject(prm, "folds", p->o.folds);
        cJSON_AddNumberToObject(prm, "rounds", p->o.rounds);
        cJSON_AddNumberToObject(prm, "max_depth", p->o.max_depth);
        cJSON_AddNumberToObject(prm, "eta", p->o.eta);
        cJSON_AddNumberToObject(prm, "seed", OS_CV_SEED);
        cJSON_AddStringToObject(prm, "target",
                                "log(median ms); power: log(energy J / s); host: log(median "
                                "host enqueue ms); each model's trees "
                                "start from its variant: trees (0), base (beta . (1, ln(FLOPs + "
                                "1), ln(bytes + 1)) per family) or roofline (ln of the roofline "
                                "ms)");
    }
    cJSON_AddNumberToObject(root, "rows", (double)in->rows);
    cJSON_AddNumberToObject(root, "energy_rows", (double)in->energy_rows);
    cJSON_AddNumberToObject(root, "trained_at", (double)time(NULL));
    cJSON_AddNumberToObject(root, "train_seconds", in->train_seconds);
    cJSON *feat = cJSON_AddArrayToObject(root, "features");
    for (int i = 0; feat && i < OPSCHED_FEATURE_COUNT; i++)
        cJSON_AddItemToArray(feat, cJSON_CreateString(opsched_feature_name(i)));
    cJSON *ops = cJSON_AddObjectToObject(root, "op_rows");
    for (size_t i = 0; ops && i < p->op_rows.cap; i++)
        if (p->op_rows.keys[i])
            cJSON_AddNumberToObject(ops, p->op_rows.keys[i], (double)p->op_rows.values[i]);
    cJSON *fam = cJSON_AddObjectToObject(root, "families");
    for (int f = 0; fam && f < OPSCHED_FAMILY_COUNT; f++) {
        if (p->family_model[f] >= 0)
            cJSON_AddNumberToObject(fam, opsched_op_family_name(f), p->family_model[f]);
        else
            cJSON_AddNullToObject(fam, opsched_op_family_name(f));
    }
    if (p->power_model >= 0)
        cJSON_AddNumberToObject(root, "power_model", p->power_model);
    else
        cJSON_AddNullToObject(root, "power_model");
    if (p->host_model >= 0)
        cJSON_AddNumberToObject(root, "host_model", p->host_model);
    else
        cJSON_AddNullToObject(root, "host_model");
    add_num_or_null(root, "power_only_ape", p->power_only_ape);
    add_num_or_null(root, "power_energy_ape", p->power_energy_ape);
    cJSON *models = cJSON_AddArrayToObject(root, "models");
    for (int i = 0; models && i < p->n_models; i++) {
        const os_model *m = &p->models[i];
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddStringToObject(o, "name", m->info.name);
        cJSON_AddNumberToObject(o, "families", m->families);
        cJSON_AddStringToObject(o, "ops", m->info.ops);
        cJSON_AddNumberToObject(o, "rows", (double)m->info.rows);
        cJSON_AddNumberToObject(o, "folds", m->info.folds);
        cJSON_AddBoolToObject(o, "trained", m->info.trained);
        cJSON_AddStringToObject(o, "file", m->info.file);
        cJSON_AddItemToObject(o, "cv", cv_json(&m->info.cv));
        cJSON_AddItemToObject(o, "baseline", cv_json(&m->info.baseline));
        cJSON *line = cJSON_AddObjectToObject(o, "baseline_line");
        for (int f = 0; line && f < OPSCHED_FAMILY_COUNT; f++) {
            if (!(m->families & (1u << f))) continue;
            cJSON *ab = cJSON_CreateArray();
            cJSON_AddItemToArray(ab, cJSON_CreateNumber(isfinite(m->base_a[f]) ? m->base_a[f] : 0));
            cJSON_AddItemToArray(ab, cJSON_CreateNumber(isfinite(m->base_b[f]) ? m->base_b[f] : 0));
            cJSON_AddItemToObject(line, opsched_op_family_name(f), ab);
        }
        cJSON_AddStringToObject(o, "variant", os_variant_name(m->variant));
        int fitted = m->variant != OS_VARIANT_ROOFLINE;
        cJSON *base = fitted ? cJSON_AddObjectToObject(o, "base") : NULL;
        if (!fitted) cJSON_AddNullToObject(o, "base");
        for (int f = 0; base && f < OPSCHED_FAMILY_COUNT; f++) {
            cJSON *b = cJSON_CreateArray();
            for (int k = 0; b && k < OS_BASE_TERMS; k++)
                cJSON_AddItemToArray(b, cJSON_CreateNumber(isfinite(m->beta[f][k]) ? m->beta[f][k]
                                                                                   : 0));
            cJSON_AddItemToObject(base, opsched_op_family_name(f), b);
        }
        cJSON_AddItemToArray(models, o);
    }
    return root;
}

static opsched_status write_text(opsched_ctx *ctx, const char *path, const char *text)
{
    return opsched_out_write(ctx, path, "model metadata", 0, text, strlen(text));
}

/* The model files the metadata at path names (to remove once replaced). */
static void old_files(const char *path, char names[][160], int *n)
{
    *n = 0;
    char *buf = NULL;
    size_t size = 0;
    /* No context: a file that cannot be read names no old files. */
    if (os_read_file(NULL, path, &buf, &size) != OPSCHED_OK) return;
    cJSON *root = buf ? cJSON_Parse(buf) : NULL;
    free(buf);
    cJSON *m;
    cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(root, "models"))
    {
        const char *file = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(m, "file"));
        if (file && *file && *n < OS_MAX_MODELS) snprintf(names[(*n)++], 160, "%s", file);
    }
    cJSON_Delete(root);
}

opsched_status os_predict_save(opsched_predictor *p)
{
    opsched_status st = OPSCHED_OK;
    char meta[1024], base[256], path[1200], tmp[1200];
    os_predict_paths(p, meta, sizeof(meta), base, sizeof(base));
    if (mkdir(p->models_dir, 0777) != 0 && errno != EEXIST)
        return OS_FAIL(p->ctx, OPSCHED_ERR_IO, "cannot create the models directory %s: %s",
                       p->models_dir, strerror(errno));
    char old[OS_MAX_MODELS][160];
    int n_old = 0;
    old_files(meta, old, &n_old);
    for (int i = 0; i < p->n_models; i++) {
        os_model *m = &p->models[i];
        m->info.file[0] = '\0';
        if (!m->booster) continue;
        snprintf(m->info.file, sizeof(m->info.file), "%.100s.m%d-%lld-%lld.xgb.json", base, i,
                 (long long)p->info.fingerprint.count, (long long)p->info.fingerprint.max_id);
        snprintf(path, sizeof(path), "%s/%s", p->models_dir, m->info.file);
        /* XGBoost picks its format by the ending: the temporary name ends
         * in .json too. */
        snprintf(tmp, sizeof(tmp), "%s/.tmp%ld-%s", p->models_dir, (long)getpid(), m->info.file);
        OS_TRY(os_xgb_save(p->ctx, m->booster, tmp));
        if (rename(tmp, path) != 0) {
            int e = errno;
            remove(tmp);
            return OS_FAIL(p->ctx, OPSCHED_ERR_IO, "cannot write %s: %s", path, strerror(e));
        }
    }
    cJSON *root = meta_json(p);
    char *text = root ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (!text) return OS_NOMEM(p->ctx);
    st = write_text(p->ctx, meta, text);
    cJSON_free(text);
    if (st != OPSCHED_OK) return st;
    for (int i = 0; i < n_old; i++) {
        int kept = 0;
        for (int j = 0; j < p->n_models; j++) kept |= strcmp(old[i], p->models[j].info.file) == 0;
        if (kept || strchr(old[i], '/')) continue;
        snprintf(path, sizeof(path), "%s/%s", p->models_dir, old[i]);
        remove(path);
    }
    return OPSCHED_OK;
}

/* ---- loading ------------------------------------------------------------------- */

static double num(const cJSON *o, const char *name, double none)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, name);
    return cJSON_IsNumber(v) ? v->valuedouble : none;
}

/* A whole number of [lo, hi] at name, else none: the file is opsched's own
 * but may be damaged, and a double outside an integer's range has no
 * defined conversion. */
static int64_t inum(const cJSON *o, const char *name, int64_t none, int64_t lo, int64_t hi)
{
    double v = num(o, name, NAN);
    if (!(v >= (double)lo && v <= (double)hi)) return none;
    return (int64_t)v;
}

static const char *str(const cJSON *o, const char *name)
{
    const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, name));
    return s ? s : "";
}

static void cv_read(const cJSON *o, opsched_cv_error *e)
{
    e->n = inum(o, "n", 0, 0, INT64_MAX / 2);
    e->median_ape = num(o, "median_ape", NAN);
    e->p90_ape = num(o, "p90_ape", NAN);
    e->max_ape = num(o, "max_ape", NAN);
    e->within10 = num(o, "within10", NAN);
}

static int same_time(double a, double b)
{
    return fabs(a - b) <= 1e-6 * (1 + fabs(a));
}

/* Why saved models do not describe the data now, or NULL when they do. */
static const char *stale_reason(const opsched_predictor *p, const cJSON *root)
{
    const opsched_predictor_info *in = &p->info;
    if (num(root, "format", -1) != OS_MODEL_FORMAT) return "the saved models are of another format";
    if (num(root, "feature_version", -1) != OS_FEATURE_VERSION)
        return "the features changed since they were trained";
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(root, "device");
    if (strcmp(str(dev, "uuid"), in->device.uuid) != 0) return "they are of another device";
    if (strcmp(str(root, "math"), p->math) || strcmp(str(root, "layout"), p->layout) ||
        strcmp(str(root, "algo_policy"), p->algo_policy) || strcmp(str(root, "cache"), p->cache))
        return "they are of other settings";
    const cJSON *fp = cJSON_GetObjectItemCaseSensitive(root, "fingerprint");
    if (inum(fp, "count", -1, 0, INT64_MAX / 2) != in->fingerprint.count ||
        inum(fp, "max_id", -1, 0, INT64_MAX / 2) != in->fingerprint.max_id ||
        !same_time(num(fp, "max_created_at", -1), in->fingerprint.max_created_at))
        return "the measurements changed since they were trained";
    double cal = num(root, "calibration_created_at", NAN);
    if (isnan(cal) != !in->has_calibration ||
        (in->has_calibration && !same_time(cal, in->calibration.created_at)))
        return "the calibration changed since they were trained";
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(root, "exclusion");
    char hash[24];
    snprintf(hash, sizeof(hash), "%016llx", (unsigned long long)p->excl_hash);
    if (p->tag[0] ? strcmp(str(x, "hash"), hash) != 0 ||
                        inum(x, "signatures", -1, 0, INT64_MAX / 2) != p->excl_count
                  : cJSON_IsObject(x))
        return "they were trained with other configurations left out";
    return NULL;
}

static opsched_status read_models(opsched_predictor *p, const cJSON *root, const char **why)
{
    const cJSON *models = cJSON_GetObjectItemCaseSensitive(root, "models");
    const cJSON *m;
    char path[1200];
    p->n_models = 0;
    cJSON_ArrayForEach(m, models)
    {
        if (p->n_models >= OS_MAX_MODELS) {
            *why = "the metadata lists too many models";
            return OPSCHED_OK;
        }
        os_model *om = &p->models[p->n_models];
        memset(om, 0, sizeof(*om));
        snprintf(om->info.name, sizeof(om->info.name), "%s", str(m, "name"));
        snprintf(om->info.ops, sizeof(om->info.ops), "%s", str(m, "ops"));
        snprintf(om->info.file, sizeof(om->info.file), "%s", str(m, "file"));
        om->families = (unsigned)inum(m, "families", 0, 0, UINT32_MAX);
        om->info.rows = inum(m, "rows", 0, 0, INT64_MAX / 2);
        om->info.folds = (int)inum(m, "folds", 0, 0, 1000);
        om->info.trained = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(m, "trained"));
        cv_read(cJSON_GetObjectItemCaseSensitive(m, "cv"), &om->info.cv);
        cv_read(cJSON_GetObjectItemCaseSensitive(m, "baseline"), &om->info.baseline);
        const cJSON *line = cJSON_GetObjectItemCaseSensitive(m, "baseline_line");
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
            const cJSON *ab = cJSON_GetObjectItemCaseSensitive(line, opsched_op_family_name(f));
            om->base_a[f] = cJSON_IsNumber(cJSON_GetArrayItem(ab, 0))
                                ? cJSON_GetArrayItem(ab, 0)->valuedouble
                                : NAN;
            om->base_b[f] = cJSON_IsNumber(cJSON_GetArrayItem(ab, 1))
                                ? cJSON_GetArrayItem(ab, 1)->valuedouble
                                : NAN;
        }
        const cJSON *base = cJSON_GetObjectItemCaseSensitive(m, "base");
        const char *variant = str(m, "variant");
        om->variant = strcmp(variant, "base") == 0       ? OS_VARIANT_BASE
                      : strcmp(variant, "roofline") == 0 ? OS_VARIANT_ROOFLINE
                                                         : OS_VARIANT_TREES;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(base, opsched_op_family_name(f));
            for (int k = 0; k < OS_BASE_TERMS; k++) {
                const cJSON *v = cJSON_GetArrayItem(b, k);
                om->beta[f][k] = cJSON_IsNumber(v) ? v->valuedouble : 0;
            }
        }
        p->n_models++;
        if (!om->info.trained) continue;
        if (!om->info.file[0] || strchr(om->info.file, '/')) {
            *why = "the metadata names no model file";
            return OPSCHED_OK;
        }
        snprintf(path, sizeof(path), "%s/%s", p->models_dir, om->info.file);
        if (os_xgb_load(p->ctx, path, &om->booster) != OPSCHED_OK) {
            os_log(p->ctx, OPSCHED_LOG_WARN, "%s", opsched_ctx_last_error(p->ctx));
            opsched_ctx_clear_error(p->ctx);
            *why = "a saved model file cannot be read";
            return OPSCHED_OK;
        }
    }
    const cJSON *fam = cJSON_GetObjectItemCaseSensitive(root, "families");
    for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) {
        double v = num(fam, opsched_op_family_name(f), -1);
        p->family_model[f] = v >= 0 && v < p->n_models ? (int)v : -1;
    }
    double pm = num(root, "power_model", -1);
    p->power_model = pm >= 0 && pm < p->n_models ? (int)pm : -1;
    double hm = num(root, "host_model", -1);
    p->host_model = hm >= 0 && hm < p->n_models ? (int)hm : -1;
    p->power_only_ape = num(root, "power_only_ape", NAN);
    p->power_energy_ape = num(root, "power_energy_ape", NAN);
    p->info.train_seconds = num(root, "train_seconds", NAN);
    return OPSCHED_OK;
}

opsched_status os_predict_load(opsched_predictor *p, int *current, char *reason, size_t size)
{
    opsched_status st = OPSCHED_OK;
    char meta[1024];
    char *text = NULL;
    size_t len = 0;
    *current = 0;
    os_predict_paths(p, meta, sizeof(meta), NULL, 0);
    struct stat sb;
    if (stat(meta, &sb) != 0) {
        snprintf(reason, size, "no saved models");
        return OPSCHED_OK;
    }
    if (os_read_file(p->ctx, meta, &text, &len) != OPSCHED_OK) {
        os_log(p->ctx, OPSCHED_LOG_WARN, "%s", opsched_ctx_last_error(p->ctx));
        opsched_ctx_clear_error(p->ctx);
        snprintf(reason, size, "the saved metadata cannot be read");
        return OPSCHED_OK;
    }
    st = os_predict_read_meta(p, text, len, current, reason, size);
    free(text);
    return st;
}

opsched_status os_predict_read_meta(opsched_predictor *p, const char *text, size_t len,
                                    int *current, char *reason, size_t size)
{
    opsched_status st = OPSCHED_OK;
    *current = 0;
    cJSON *root = cJSON_ParseWithLength(text, len);
    const char *why = root ? stale_reason(p, root) : "the saved metadata is not JSON";
    if (!why) st = read_models(p, root, &why);
    cJSON_Delete(root);
    if (st != OPSCHED_OK || why) {
        for (int i = 0; i < p->n_models; i++) {
            os_xgb_free(p->models[i].booster);
            p->models[i].booster = NULL;
        }
        p->n_models = 0;
        p->power_model = p->host_model = -1;
        for (int f = 0; f < OPSCHED_FAMILY_COUNT; f++) p->family_model[f] = -1;
        if (why) snprintf(reason, size, "%s", why);
        return st;
    }
    *current = 1;
    return OPSCHED_OK;
}
