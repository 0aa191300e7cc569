// The optim layer in one include: Optimizer with param groups and state dicts, SGD, Adam, AdamW,
// RMSprop, Adagrad, the learning-rate schedules and ReduceLROnPlateau.
#pragma once
#include "optim/adam.h"
#include "optim/optimizer.h"
#include "optim/plateau.h"
#include "optim/adaptive.h"
#include "optim/scheduler.h"
#include "optim/sgd.h"
