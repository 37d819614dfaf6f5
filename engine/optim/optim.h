// Everything of engine/optim in one include.
#pragma once
#include "engine/optim/adam.h"
#include "engine/optim/clip_grad.h"
#include "engine/optim/factory.h"
#include "engine/optim/lr_scheduler.h"
#include "engine/optim/optimizer.h"
#include "engine/optim/rmsprop.h"
#include "engine/optim/sgd.h"
