// The distributed floor in one include: process groups, their start-up, DistributedDataParallel.
#pragma once
#include "distributed/bucket_assignment.h"
#include "distributed/data_parallel.h"
#include "distributed/distributed_data_parallel.h"
#include "distributed/init.h"
#include "distributed/process_group.h"
#include "distributed/reducer.h"
#include "distributed/sync_batch_norm.h"
