"""What an exported SavedModel contains: signatures and graph ops."""

import os

from keras_attention.utils.optional import import_optional

tf = import_optional("tensorflow", "tensorflow", "SavedModel export")
saved_model_pb2 = import_optional(
    "tensorflow.core.protobuf.saved_model_pb2",
    "tensorflow",
    "SavedModel export",
)


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


def tensorflow_text_op_names():
    """The op types that TensorFlow Text's kernel libraries register."""
    import glob

    import tensorflow_text
    from tensorflow.core.framework import op_def_pb2
    from tensorflow.python.client import pywrap_tf_session

    folder = os.path.dirname(tensorflow_text.__file__)
    names = set()
    for library in glob.glob(os.path.join(folder, "python", "ops", "*.so")):
        # Loading again returns the handle of the already loaded library.
        handle = pywrap_tf_session.TF_LoadLibrary(library)
        ops = op_def_pb2.OpList()
        ops.ParseFromString(pywrap_tf_session.TF_GetOpList(handle))
        names.update(op.name for op in ops.op)
    return names


def nonstandard_op_names(path):
    """Ops of the graph that are neither core TensorFlow (`tf.raw_ops`) nor
    TensorFlow Text; an empty list means TF Serving with the TF Text ops
    can run the graph."""
    standard = set(dir(tf.raw_ops)) | tensorflow_text_op_names()
    return [name for name in graph_op_names(path) if name not in standard]
