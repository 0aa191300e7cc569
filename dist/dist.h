// The distributed floor in one include: process groups, their start-up, DistributedDataParallel.
#pragma once
#include "dist/bucket_assignment.h"
#include "dist/data_parallel.h"
#include "dist/distributed_data_parallel.h"
#include "dist/init.h"
#include "dist/process_group.h"
#include "dist/reducer.h"
