/* opsched/opsched.h - the whole public API of libopsched. */
#ifndef OPSCHED_OPSCHED_H
#define OPSCHED_OPSCHED_H

#include "opsched/core.h"
#include "opsched/csv.h"
#include "opsched/graph.h"
#include "opsched/npy.h"
#include "opsched/onnx.h"
#include "opsched/zoo.h"
#include "opsched/backend.h"
#include "opsched/measure.h"
#include "opsched/exec.h"
#include "opsched/store.h"
#include "opsched/sweep.h"
#include "opsched/profile.h"
#include "opsched/predict.h"
#include "opsched/sched.h"
#include "opsched/training.h"
#include "opsched/comm.h"

#endif /* OPSCHED_OPSCHED_H */
