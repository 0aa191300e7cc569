// The optim layer in one include: Optimizer with param groups and state dicts, SGD, Adam, AdamW,
// and the learning-rate schedules.
#pragma once
#include "optim/adam.h"
#include "optim/optimizer.h"
#include "optim/scheduler.h"
#include "optim/sgd.h"
