// The nn layer in one include: Module and Layer, containers, layers, losses, functional forms,
// initialisers, gradient clipping and module save/load.
#pragma once
#include "nn/activation.h"
#include "nn/any_module.h"
#include "nn/clip_grad.h"
#include "nn/container.h"
#include "nn/dropout.h"
#include "nn/functional.h"
#include "nn/init.h"
#include "nn/linear.h"
#include "nn/loss.h"
#include "nn/module.h"
#include "nn/padding.h"
#include "nn/sequence_layers.h"
#include "nn/serialize.h"
#include "nn/shape_layers.h"
#include "nn/transformer.h"
#include "nn/upsample.h"
