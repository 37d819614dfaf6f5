// Everything of engine/nn in one include.
#pragma once
#include "engine/nn/activation.h"
#include "engine/nn/conv.h"
#include "engine/nn/dropout.h"
#include "engine/nn/embedding.h"
#include "engine/nn/flatten.h"
#include "engine/nn/functional.h"
#include "engine/nn/init.h"
#include "engine/nn/linear.h"
#include "engine/nn/module.h"
#include "engine/nn/normalization.h"
#include "engine/nn/pooling.h"
#include "engine/nn/rnn.h"
