/*
 * xgb.c - gradient-boosted trees through XGBoost's C API: train a
 * regressor on a dense matrix (NaN marks a missing feature), predict,
 * save and load as XGBoost's JSON model format.  Every failed call puts
 * XGBoost's own message on the context.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <xgboost/c_api.h>

#include "predict/predict_impl.h"

#define XGB_CHECK(ctx, call)                                                                       \
    do {                                                                                           \
        if ((call) != 0)                                                                           \
            return OS_FAIL((ctx), OPSCHED_ERR_BACKEND, "XGBoost: %s: %s", #call,                   \
                           XGBGetLastError());                                                     \
    } while (0)

#define XGB_CHECK_GOTO(ctx, st, call, label)                                                       \
    do {                                                                                           \
        if ((call) != 0) {                                                                         \
            (st) = OS_FAIL((ctx), OPSCHED_ERR_BACKEND, "XGBoost: %s: %s", #call,                   \
                           XGBGetLastError());                                                     \
            goto label;                                                                            \
        }                                                                                          \
    } while (0)

/* A dense matrix; margin (may be NULL) is each row's starting point,
 * which the trees correct. */
static opsched_status matrix(opsched_ctx *ctx, const float *x, const float *margin, int64_t n,
                             DMatrixHandle *out)
{
    XGB_CHECK(ctx, XGDMatrixCreateFromMat(x, (bst_ulong)n, OPSCHED_FEATURE_COUNT, NAN, out));
    if (margin && XGDMatrixSetFloatInfo(*out, "base_margin", margin, (bst_ulong)n) != 0) {
        opsched_status st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "XGBoost: base_margin: %s",
                                    XGBGetLastError());
        XGDMatrixFree(*out);
        *out = NULL;
        return st;
    }
    return OPSCHED_OK;
}

opsched_status os_xgb_train(opsched_ctx *ctx, const float *x, const float *margin, const float *y,
                            int64_t n, const os_xgb_params *prm, void **booster)
{
    opsched_status st = OPSCHED_OK;
    DMatrixHandle d = NULL;
    BoosterHandle b = NULL;
    char v[32];
    *booster = NULL;
    if (n < 1) return OS_FAIL(ctx, OPSCHED_ERR_INVALID_ARG, "XGBoost: no rows to train on");
    OS_TRY(matrix(ctx, x, margin, n, &d));
    XGB_CHECK_GOTO(ctx, st, XGDMatrixSetFloatInfo(d, "label", y, (bst_ulong)n), done);
    XGB_CHECK_GOTO(ctx, st, XGBoosterCreate(&d, 1, &b), done);
    /* Deterministic: exact histogram splits over all rows and columns, a
     * fixed seed; results do not depend on the thread count. */
    const char *fixed[][2] = {{"verbosity", "0"},        {"objective", "reg:squarederror"},
                              {"tree_method", "hist"},   {"subsample", "1"},
                              {"colsample_bytree", "1"}, {"min_child_weight", "1"},
                              {"lambda", "1"}};
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        XGB_CHECK_GOTO(ctx, st, XGBoosterSetParam(b, fixed[i][0], fixed[i][1]), done);
    snprintf(v, sizeof(v), "%d", prm->max_depth);
    XGB_CHECK_GOTO(ctx, st, XGBoosterSetParam(b, "max_depth", v), done);
    snprintf(v, sizeof(v), "%.6g", prm->eta);
    XGB_CHECK_GOTO(ctx, st, XGBoosterSetParam(b, "eta", v), done);
    snprintf(v, sizeof(v), "%u", prm->seed);
    XGB_CHECK_GOTO(ctx, st, XGBoosterSetParam(b, "seed", v), done);
    if (prm->threads > 0) {
        snprintf(v, sizeof(v), "%d", prm->threads);
        XGB_CHECK_GOTO(ctx, st, XGBoosterSetParam(b, "nthread", v), done);
    }
    for (int it = 0; it < prm->rounds; it++)
        XGB_CHECK_GOTO(ctx, st, XGBoosterUpdateOneIter(b, it, d), done);
    /* Predictions are of a network's layers at most: one thread. */
    XGB_CHECK_GOTO(ctx, st, XGBoosterSetParam(b, "nthread", "1"), done);
    *booster = b;
    b = NULL;
done:
    if (b) XGBoosterFree(b);
    XGDMatrixFree(d);
    return st;
}

opsched_status os_xgb_predict(opsched_ctx *ctx, void *booster, const float *x,
                              const float *margin, int64_t n, float *out)
{
    opsched_status st = OPSCHED_OK;
    DMatrixHandle d = NULL;
    bst_ulong len = 0;
    const float *res = NULL;
    if (n < 1) return OPSCHED_OK;
    OS_TRY(matrix(ctx, x, margin, n, &d));
    XGB_CHECK_GOTO(ctx, st, XGBoosterPredict(booster, d, 0, 0, 0, &len, &res), done);
    if (len != (bst_ulong)n) {
        st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "XGBoost: %llu predictions for %lld rows",
                     (unsigned long long)len, (long long)n);
        goto done;
    }
    memcpy(out, res, sizeof(float) * (size_t)n);
done:
    XGDMatrixFree(d);
    return st;
}

opsched_status os_xgb_save(opsched_ctx *ctx, void *booster, const char *path)
{
    if (XGBoosterSaveModel(booster, path) != 0)
        return OS_FAIL(ctx, OPSCHED_ERR_IO, "XGBoost: cannot save the model %s: %s", path,
                       XGBGetLastError());
    return OPSCHED_OK;
}

opsched_status os_xgb_load(opsched_ctx *ctx, const char *path, void **booster)
{
    BoosterHandle b = NULL;
    *booster = NULL;
    XGB_CHECK(ctx, XGBoosterCreate(NULL, 0, &b));
    if (XGBoosterLoadModel(b, path) != 0) {
        opsched_status st = OS_FAIL(ctx, OPSCHED_ERR_PARSE, "XGBoost: cannot load the model %s: %s",
                                    path, XGBGetLastError());
        XGBoosterFree(b);
        return st;
    }
    if (XGBoosterSetParam(b, "nthread", "1") != 0) {
        opsched_status st = OS_FAIL(ctx, OPSCHED_ERR_BACKEND, "XGBoost: nthread: %s",
                                    XGBGetLastError());
        XGBoosterFree(b);
        return st;
    }
    *booster = b;
    return OPSCHED_OK;
}

void os_xgb_free(void *booster)
{
    if (booster) XGBoosterFree(booster);
}
