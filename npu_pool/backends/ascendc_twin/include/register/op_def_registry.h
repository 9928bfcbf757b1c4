// EvoKernel Ascend C twin: the op project's operator registration, included as in the toolkit
// (#include "register/op_def_registry.h"), so a published op_host file compiles unchanged.
//
// On a device OpDef describes the operator to the graph engine (inputs, outputs, attributes,
// shape and type inference, the tiling function per SoC). The twin's launcher gets all of that
// from the task (npu_twin_build.host_glue), so the description is accepted and ignored: every
// call chains, OP_ADD constructs the definition once at load (as CANN registers it), and the
// inference functions are declared with their real context types but never called.
#pragma once

#include <string>
#include <vector>

#include "../tiling/tiling_api.h"

namespace ge {
enum Format { FORMAT_NCHW = 0, FORMAT_NHWC = 1, FORMAT_ND = 2, FORMAT_NC1HWC0 = 3, FORMAT_FRACTAL_Z = 4,
              FORMAT_FRACTAL_NZ = 29 };
}  // namespace ge

namespace gert {

using Shape = ge::Shape;

class InferShapeContext {
public:
    const Shape* GetInputShape(size_t i) const { return i < shapes_.size() ? &shapes_[i] : nullptr; }
    Shape* GetOutputShape(size_t i) { return i < shapes_.size() ? &shapes_[i] : nullptr; }
    const RuntimeAttrs* GetAttrs() const { return &attrs_; }

private:
    std::vector<Shape> shapes_;
    RuntimeAttrs attrs_;
};

class InferDataTypeContext {
public:
    ge::DataType GetInputDataType(size_t) const { return ge::DT_FLOAT; }
    ge::DataType GetOutputDataType(size_t) const { return ge::DT_FLOAT; }
    ge::graphStatus SetOutputDataType(size_t, ge::DataType) { return ge::GRAPH_SUCCESS; }
};

}  // namespace gert

namespace ops {

enum Option { IGNORE = 0, OPTIONAL = 1, REQUIRED = 2, DYNAMIC = 3 };
enum AttrType { ATTR_OPTIONAL = 1, ATTR_REQUIRED = 2 };
using InferShapeFunc = ge::graphStatus (*)(gert::InferShapeContext*);
using InferDataTypeFunc = ge::graphStatus (*)(gert::InferDataTypeContext*);
using TilingFunc = ge::graphStatus (*)(gert::TilingContext*);

// Every setter of the documented description classes: accepted, chained, ignored.
#define EVK_OPDEF_ACCEPTS(CLASS, NAME) \
    template <class... A>              \
    CLASS& NAME(A&&...) { return *this; }

class OpParamDef {
public:
    EVK_OPDEF_ACCEPTS(OpParamDef, ParamType)
    OpParamDef& DataType(std::vector<ge::DataType>) { return *this; }
    OpParamDef& DataTypeList(std::vector<ge::DataType>) { return *this; }
    OpParamDef& Format(std::vector<ge::Format>) { return *this; }
    OpParamDef& FormatList(std::vector<ge::Format>) { return *this; }
    OpParamDef& UnknownShapeFormat(std::vector<ge::Format>) { return *this; }
    EVK_OPDEF_ACCEPTS(OpParamDef, ValueDepend)
    OpParamDef& AutoContiguous() { return *this; }
    OpParamDef& IgnoreContiguous() { return *this; }
    OpParamDef& Scalar() { return *this; }
    OpParamDef& ScalarList() { return *this; }
};

class OpAttrDef {
public:
    EVK_OPDEF_ACCEPTS(OpAttrDef, AttrType)
    OpAttrDef& Bool(bool = false) { return *this; }
    OpAttrDef& Float(float = 0.0f) { return *this; }
    OpAttrDef& Int(int64_t = 0) { return *this; }
    OpAttrDef& String(const char* = "") { return *this; }
    OpAttrDef& ListBool(std::vector<bool> = {}) { return *this; }
    OpAttrDef& ListFloat(std::vector<float> = {}) { return *this; }
    OpAttrDef& ListInt(std::vector<int64_t> = {}) { return *this; }
};

class OpAICoreConfig {
public:
    EVK_OPDEF_ACCEPTS(OpAICoreConfig, DynamicCompileStaticFlag)
    EVK_OPDEF_ACCEPTS(OpAICoreConfig, DynamicFormatFlag)
    EVK_OPDEF_ACCEPTS(OpAICoreConfig, DynamicRankSupportFlag)
    EVK_OPDEF_ACCEPTS(OpAICoreConfig, DynamicShapeSupportFlag)
    EVK_OPDEF_ACCEPTS(OpAICoreConfig, NeedCheckSupportFlag)
    EVK_OPDEF_ACCEPTS(OpAICoreConfig, PrecisionReduceFlag)
    EVK_OPDEF_ACCEPTS(OpAICoreConfig, ExtendCfgInfo)
    OpParamDef& Input(const char*) { return param_; }
    OpParamDef& Output(const char*) { return param_; }

private:
    OpParamDef param_;
};

class OpAICoreDef {
public:
    OpAICoreDef& SetTiling(TilingFunc) { return *this; }
    EVK_OPDEF_ACCEPTS(OpAICoreDef, SetCheckSupport)
    EVK_OPDEF_ACCEPTS(OpAICoreDef, SetOpSelectFormat)
    EVK_OPDEF_ACCEPTS(OpAICoreDef, AddConfig)
};
#undef EVK_OPDEF_ACCEPTS

class OpDef {
public:
    explicit OpDef(const char* name) : name_(name) {}
    OpParamDef& Input(const char*) { return param_; }
    OpParamDef& Output(const char*) { return param_; }
    OpAttrDef& Attr(const char*) { return attr_; }
    OpDef& SetInferShape(InferShapeFunc) { return *this; }
    OpDef& SetInferShapeRange(InferShapeFunc) { return *this; }
    OpDef& SetInferDataType(InferDataTypeFunc) { return *this; }
    OpAICoreDef& AICore() { return aicore_; }
    OpDef& MC2() { return *this; }

private:
    std::string name_;
    OpParamDef param_;
    OpAttrDef attr_;
    OpAICoreDef aicore_;
};

}  // namespace ops

// CANN registers the definition when the op library loads; here it is built once and dropped.
#define OP_ADD(OP_TYPE, ...) \
    [[maybe_unused]] static const OP_TYPE evk_twin_op_def_##OP_TYPE(#OP_TYPE)
