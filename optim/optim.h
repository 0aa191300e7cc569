// The optim layer in one include: Optimizer with param groups and state dicts, SGD, Adam, AdamW,
// RMSprop, Adagrad, Adadelta, Adamax, NAdam, RAdam, the learning-rate schedules (chained and sequential too) and ReduceLROnPlateau.
#pragma once
#include "optim/adam.h"
#include "optim/optimizer.h"
#include "optim/plateau.h"
#include "optim/rprop_asgd.h"
#include "optim/adam_variants.h"
#include "optim/lbfgs.h"
#include "optim/adaptive.h"
#include "optim/chained_scheduler.h"
#include "optim/cyclic_lr.h"
#include "optim/factor_schedulers.h"
#include "optim/scheduler.h"
#include "optim/sequential_lr.h"
#include "optim/sgd.h"
#include "optim/swalr.h"
#include "optim/warm_restarts.h"
