/*
 * cmd_train_model.c - `opsched train-model --db FILE [--target NAME]`:
 * trains the learned cost models of one device and setting from the
 * measurement database, saves them next to it, and prints each model's
 * cross-validated error beside the FLOPs-only baseline's.
 */
#include <math.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "predict_args.h"

static const char train_usage[] =
    "usage: opsched train-model (--db FILE | --data NAME) [--target NAME|ID] [options]\n\n"
    "Trains the learned cost models of one device and setting (math, layout,\n"
    "algorithm policy, cache state) from the measurements in the database: one\n"
    "XGBoost model of log latency per operator family (conv, conv+relu for a\n"
    "convolution measured with its Relu fused, gemm for linear and matmul, other;\n"
    "families with too few rows share a model) and one of effective power (energy\n"
    "per launch / latency) over all of them.  Each is judged by k-fold\n"
    "cross-validation over distinct configurations: the median, 90th percentile\n"
    "and largest absolute percentage error, and the share within +-10%; the\n"
    "FLOPs-fit columns are the same for a log-log line of latency on FLOPs per\n"
    "family (for the power model: the training folds' median power).  With host\n"
    "enqueue times per layer in the database (opsched profile's \";mode=host\" rows),\n"
    "a host model of log host time per launch too, which eager predictions use for\n"
    "layers whose configuration was never profiled.  Models are\n"
    "saved in FILE.models/; `opsched predict` uses them and retrains them by\n"
    "itself when the measurements or the calibration change.  --format csv writes\n"
    "one row per model.\n";

static void add_cv(cJSON *o, const char *name, const opsched_cv_error *e)
{
    cJSON *c = cJSON_AddObjectToObject(o, name);
    if (!c) return;
    cJSON_AddNumberToObject(c, "n", (double)e->n);
    cJSON_AddNumberToObject(c, "median_ape", e->median_ape);
    cJSON_AddNumberToObject(c, "p90_ape", e->p90_ape);
    cJSON_AddNumberToObject(c, "max_ape", e->max_ape);
    cJSON_AddNumberToObject(c, "within10", e->within10);
}

/* An error figure; one not finite (no folds, nothing to compare) is empty. */
static void csv_pct(opsched_csv_writer *w, double v)
{
    if (isfinite(v)) opsched_csv_double(w, v, "%.6g");
    else opsched_csv_empty(w);
}

static opsched_status print_csv(opsched_ctx *ctx, const opsched_predictor *p)
{
    opsched_csv_writer *w = NULL;
    opsched_status st = opsched_csv_writer_create(ctx, stdout, &w);
    if (st == OPSCHED_OK)
        st = opsched_csv_header(w, "model,ops,rows,folds,trained,cv_median_ape,cv_p90_ape,"
                                   "cv_max_ape,cv_within10,baseline_median_ape,"
                                   "baseline_p90_ape,file");
    for (int i = 0; st == OPSCHED_OK && i < opsched_predictor_num_models(p); i++) {
        const opsched_model_info *m = opsched_predictor_model(p, i);
        opsched_csv_str(w, m->name);
        opsched_csv_str(w, m->ops);
        opsched_csv_int(w, m->rows);
        opsched_csv_int(w, m->folds);
        opsched_csv_int(w, m->trained);
        csv_pct(w, m->cv.median_ape);
        csv_pct(w, m->cv.p90_ape);
        csv_pct(w, m->cv.max_ape);
        csv_pct(w, m->cv.within10);
        csv_pct(w, m->baseline.median_ape);
        csv_pct(w, m->baseline.p90_ape);
        opsched_csv_str(w, m->file);
        st = opsched_csv_end_row(w);
    }
    opsched_csv_writer_free(w);
    return st;
}

static void print_json(const opsched_predictor *p, const opsched_predictor_info *in)
{
    cJSON *root = cJSON_CreateObject();
    if (!root) return;
    cJSON_AddStringToObject(root, "device", in->device.name);
    cJSON_AddStringToObject(root, "backend", in->device.backend);
    cJSON_AddNumberToObject(root, "device_id", (double)in->device.id);
    cJSON_AddStringToObject(root, "math", in->math);
    cJSON_AddStringToObject(root, "layout", in->layout);
    cJSON_AddStringToObject(root, "algo_policy", in->algo_policy);
    cJSON_AddStringToObject(root, "cache", in->cache);
    cJSON_AddNumberToObject(root, "configurations", (double)in->rows);
    cJSON_AddNumberToObject(root, "with_energy", (double)in->energy_rows);
    cJSON_AddBoolToObject(root, "calibration", in->has_calibration);
    cJSON_AddNumberToObject(root, "train_seconds", in->train_seconds);
    cJSON_AddStringToObject(root, "metadata", in->metadata_file);
    cJSON *models = cJSON_AddArrayToObject(root, "models");
    for (int i = 0; models && i < opsched_predictor_num_models(p); i++) {
        const opsched_model_info *m = opsched_predictor_model(p, i);
        cJSON *o = cJSON_CreateObject();
        if (!o) break;
        cJSON_AddStringToObject(o, "name", m->name);
        cJSON_AddStringToObject(o, "ops", m->ops);
        cJSON_AddNumberToObject(o, "rows", (double)m->rows);
        cJSON_AddNumberToObject(o, "folds", m->folds);
        cJSON_AddBoolToObject(o, "trained", m->trained);
        cJSON_AddStringToObject(o, "file", m->file);
        add_cv(o, "cv", &m->cv);
        add_cv(o, "baseline", &m->baseline);
        cJSON_AddItemToArray(models, o);
    }
    char *text = cJSON_Print(root);
    if (text) printf("%s\n", text);
    cJSON_free(text);
    cJSON_Delete(root);
}

int cmd_train_model(opsched_ctx *ctx, int argc, char **argv)
{
    predict_args a;
    tool_format fmt = TOOL_FMT_TABLE;
    predict_args_init(&a);
    const tool_optgroup groups[] = {
        {"prediction data options", predict_data_optlist, predict_args_opt, &a},
        {"training options", predict_train_optlist, predict_args_opt, &a},
        {"output options", tool_format_optlist, tool_format_opt, &fmt}};
    const tool_cli cli = {"train-model", train_usage, NULL, groups, 3, 0, NULL};
    const char *pos[1];
    int n_pos = 0;
    int prc = tool_args_parse(&cli, argc, argv, pos, &n_pos);
    if (prc != TOOL_EXIT_OK) return prc == TOOL_ARGS_HELP ? TOOL_EXIT_OK : prc;
    int rc = predict_args_finish(&a, ctx, "train-model");
    if (rc != TOOL_EXIT_OK) return rc;
    a.po.retrain = 1;
    opsched_predictor *p = NULL;
    opsched_status st = opsched_predictor_open(ctx, a.db_path, &a.po, &p);
    if (st != OPSCHED_OK) return tool_fail(ctx, st, a.db_path);
    opsched_predictor_info in;
    opsched_predictor_info_get(p, &in);
    if (fmt == TOOL_FMT_JSON) {
        print_json(p, &in);
    } else if (fmt == TOOL_FMT_CSV) {
        st = print_csv(ctx, p);
        if (st != OPSCHED_OK) {
            opsched_predictor_free(p);
            return tool_fail(ctx, st, "CSV");
        }
    } else {
        printf("%s:%s (device %lld in %s), %s %s, %s, cache %s\n", in.device.backend,
               in.device.name, (long long)in.device.id, a.db_path, in.math, in.layout,
               in.algo_policy, in.cache);
        printf("  %lld distinct configurations measured, %lld with energy, %lld with host "
               "times; calibration: %s\n",
               (long long)in.rows, (long long)in.energy_rows, (long long)in.host_rows,
               in.has_calibration ? "yes (roofline features and fallback)" : "none");
        if (opsched_predictor_num_models(p) == 0) {
            printf("  no measurements under these settings: nothing to train\n");
            fflush(stdout);
            tool_print_holdings(ctx, "train-model", a.db_path);
            fprintf(stderr,
                    "opsched train-model: to measure under them: opsched sweep SPEC.yml "
                    "(or --for-model MODEL) --db %s --math %s --layout %s\n",
                    a.db_path, in.math, in.layout);
        } else {
            predict_print_models(stdout, p);
        }
        printf("  trained in %.1f s; models in %s\n", in.train_seconds, in.models_dir);
    }
    opsched_predictor_free(p);
    return TOOL_EXIT_OK;
}
