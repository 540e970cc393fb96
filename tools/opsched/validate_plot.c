/*
 * validate_plot.c - the figure of `opsched validate --plot`, drawn with
 * PLplot (libplplot-dev): SVG through its svg driver, PNG through
 * pngcairo.  Left: predicted against measured latency on log-log axes,
 * with the diagonal and the +-10% band.  Right: each run's signed error
 * by model, graph runs as circles and free-running runs as crosses.
 *
 * Both panels share one page (viewports side by side), the title above.
 *
 * PLplot ends the process on a fatal error (plexit); what can be checked
 * beforehand is: the driver exists and the file can be written.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "validate.h"

#ifdef OPSCHED_HAVE_PLPLOT
#include <plplot.h>

int validate_plot_available(void)
{
    return 1;
}

static int has_driver(const char *name)
{
    const char **menu = NULL, **devs = NULL;
    int n = 64;
    const char *m[64], *d[64];
    menu = m;
    devs = d;
    plgDevs(&menu, &devs, &n);
    for (int i = 0; i < n; i++)
        if (devs[i] && strcmp(devs[i], name) == 0) return 1;
    return 0;
}

static int on_plplot_exit(const char *msg)
{
    fprintf(stderr, "opsched validate: PLplot failed: %s\n", msg);
    return 1;
}

/* Colours for up to 12 models (colour map 0 entries 2..13). */
static const int palette[12][3] = {
    {31, 119, 180}, {255, 127, 14}, {44, 160, 44},  {214, 39, 40},
    {148, 103, 189}, {140, 86, 75}, {227, 119, 194}, {127, 127, 127},
    {188, 189, 34}, {23, 190, 207}, {0, 0, 128},    {128, 0, 0}};

static int model_index(const char *m, const char *const *models, int n_models)
{
    for (int i = 0; i < n_models; i++)
        if (strcmp(models[i], m) == 0) return i;
    return -1;
}

static void set_colour(int i)
{
    plcol0(2 + i % 12);
}

static void scatter(const validate_point *pts, int n, const char *const *models, int n_models,
                    double lo, double hi)
{
    plvpor(0.09, 0.47, 0.13, 0.84);
    plwind(log10(lo), log10(hi), log10(lo), log10(hi));
    plcol0(1);
    plbox("bcnstlg", 0, 0, "bcnstvlg", 0, 0);
    pllab("measured latency (ms)", "predicted latency (ms)", "predicted against measured");
    PLFLT x[2] = {log10(lo), log10(hi)}, y[2];
    y[0] = x[0];
    y[1] = x[1];
    plcol0(1);
    plline(2, x, y);
    pllsty(2);
    for (int s = -1; s <= 1; s += 2) {
        PLFLT yb[2] = {x[0] + log10(1 + 0.1 * s), x[1] + log10(1 + 0.1 * s)};
        plline(2, x, yb);
    }
    pllsty(1);
    for (int i = 0; i < n; i++) {
        int k = model_index(pts[i].model, models, n_models);
        PLFLT px = log10(pts[i].measured_ms), py = log10(pts[i].predicted_ms);
        set_colour(k < 0 ? 0 : k);
        plpoin(1, &px, &py, pts[i].graph ? 4 : 5); /* o graph, x free */
    }
    /* The legend: model names in their colours, top left. */
    double span = log10(hi) - log10(lo);
    plschr(0, 0.7);
    for (int k = 0; k <= n_models; k++) {
        if (k < n_models)
            set_colour(k);
        else
            plcol0(1);
        plptex(log10(lo) + 0.03 * span, log10(hi) - (0.06 + 0.05 * k) * span, 1, 0, 0.0,
               k < n_models ? models[k] : "o graph   x free");
    }
    plschr(0, 1.0);
}

static void errors_by_model(const validate_point *pts, int n, const char *const *models,
                            int n_models)
{
    double lim = 10;
    for (int i = 0; i < n; i++)
        if (isfinite(pts[i].error_pct)) lim = fmax(lim, fabs(pts[i].error_pct) * 1.1);
    plvpor(0.57, 0.98, 0.2, 0.84);
    plwind(-0.5, n_models - 0.5, -lim, lim);
    plcol0(1);
    plbox("bc", 0, 0, "bcnstvg", 0, 0);
    pllab("", "error (%)", "error by model");
    PLFLT x[2] = {-0.5, n_models - 0.5}, y[2] = {0, 0};
    plline(2, x, y);
    pllsty(2);
    for (int s = -1; s <= 1; s += 2) {
        PLFLT yb[2] = {10.0 * s, 10.0 * s};
        plline(2, x, yb);
    }
    pllsty(1);
    /* Spread a model's runs across its slot so they do not hide each other. */
    for (int k = 0; k < n_models; k++) {
        int count = 0, seen = 0;
        for (int i = 0; i < n; i++)
            if (strcmp(pts[i].model, models[k]) == 0) count++;
        for (int i = 0; i < n; i++) {
            if (strcmp(pts[i].model, models[k]) != 0 || !isfinite(pts[i].error_pct)) continue;
            PLFLT px = k + (count > 1 ? 0.6 * ((double)seen / (count - 1) - 0.5) : 0.0);
            PLFLT py = pts[i].error_pct;
            set_colour(k);
            plpoin(1, &px, &py, pts[i].graph ? 4 : 5); /* o graph, x free */
            seen++;
        }
        plcol0(1);
        plschr(0, 0.75);
        plmtex("b", k % 2 ? 2.6 : 1.2, (k + 0.5) / n_models, 0.5, models[k]);
        plschr(0, 1.0);
    }
}

int validate_plot(const char *path, const char *file, const char *title,
                  const validate_point *pts, int n, const char *const *models, int n_models,
                  char *err, size_t err_size)
{
    size_t len = strlen(path);
    const char *dev = NULL;
    if (len > 4 && strcmp(path + len - 4, ".svg") == 0)
        dev = "svg";
    else if (len > 4 && strcmp(path + len - 4, ".png") == 0)
        dev = "pngcairo";
    if (!dev) {
        snprintf(err, err_size, "%s: the plot is written as .svg or .png", path);
        return -1;
    }
    if (!has_driver(dev)) {
        snprintf(err, err_size,
                 "PLplot has no '%s' driver here (install plplot-driver-cairo for PNG, or "
                 "write .svg)",
                 dev);
        return -1;
    }
    double lo = INFINITY, hi = 0;
    for (int i = 0; i < n; i++) {
        if (!(pts[i].measured_ms > 0) || !(pts[i].predicted_ms > 0)) continue;
        lo = fmin(lo, fmin(pts[i].measured_ms, pts[i].predicted_ms));
        hi = fmax(hi, fmax(pts[i].measured_ms, pts[i].predicted_ms));
    }
    if (!(hi > 0)) {
        snprintf(err, err_size, "nothing to plot: no run has both a measured and a predicted "
                                "latency");
        return -1;
    }
    lo /= 1.5;
    hi *= 1.5;

    plsexit(on_plplot_exit);
    plsdev(dev);
    plsfnam(file);
    plspage(0, 0, 1400, 620, 0, 0);
    plscolbg(255, 255, 255);
    plscol0(1, 0, 0, 0);
    for (int i = 0; i < 12; i++) plscol0(2 + i, palette[i][0], palette[i][1], palette[i][2]);
    plinit();
    plfontld(1);
    plssym(0, 0.75);
    pladv(0);
    scatter(pts, n, models, n_models, lo, hi);
    errors_by_model(pts, n, models, n_models);
    if (title && *title) { /* across the page, above both panels */
        plvpor(0.0, 1.0, 0.93, 1.0);
        plwind(0, 1, 0, 1);
        plcol0(1);
        plschr(0, 0.9);
        plptex(0.5, 0.4, 1, 0, 0.5, title);
        plschr(0, 1.0);
    }
    plend();
    return 0;
}

#else /* no PLplot */

int validate_plot_available(void)
{
    return 0;
}

int validate_plot(const char *path, const char *file, const char *title,
                  const validate_point *pts, int n, const char *const *models, int n_models,
                  char *err, size_t err_size)
{
    (void)path;
    (void)file;
    (void)title;
    (void)pts;
    (void)n;
    (void)models;
    (void)n_models;
    snprintf(err, err_size, "this opsched was built without PLplot (install libplplot-dev, "
                            "then configure again)");
    return -1;
}

#endif
