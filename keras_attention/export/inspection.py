"""What an exported SavedModel contains: signatures and graph ops."""

import os

import tensorflow as tf
from tensorflow.core.protobuf import saved_model_pb2


def signature_summary(path):
    """`{signature: {"inputs": {name: (dtype, shape)}, "outputs": ...}}`.

    Read from the `saved_model.pb` proto, without loading the graph.
    Internal entries (`__saved_model_init_op`) are left out.
    """
    meta_graph = _meta_graph(path)
    summary = {}
    for name, signature in sorted(meta_graph.signature_def.items()):
        if name.startswith("__"):
            continue
        summary[name] = {
            side: {
                key: (
                    tf.dtypes.as_dtype(info.dtype).name,
                    [d.size for d in info.tensor_shape.dim],
                )
                for key, info in getattr(signature, side).items()
            }
            for side in ("inputs", "outputs")
        }
    return summary


def graph_op_names(path):
    """Every op type in the graph and in its function library, sorted."""
    graph = _meta_graph(path).graph_def
    names = {node.op for node in graph.node}
    for function in graph.library.function:
        names.update(node.op for node in function.node_def)
    return sorted(names)


def _meta_graph(path):
    proto = saved_model_pb2.SavedModel()
    with open(os.path.join(path, "saved_model.pb"), "rb") as f:
        proto.ParseFromString(f.read())
    return proto.meta_graphs[0]
