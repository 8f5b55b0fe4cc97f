import SwiftBERTKernels

/// Where a module's tensors are and how its Linear layers run: the weights file, the module's
/// name in the checkpoint, and the precision (candle's `VarBuilder`). A model opens one at the
/// root of its file; each module loads its own parameters through it and hands its children the
/// scope of their names, so no initialiser takes a file, a name and a precision by hand.
struct WeightScope {
    let file: SafeTensorsFile
    /// The module's name ("encoder.layer.3.attention"); "" at the root.
    let name: String
    let precision: Precision

    init(_ file: SafeTensorsFile, name: String = "", precision: Precision) {
        (self.file, self.name, self.precision) = (file, name, precision)
    }

    /// The scope of the child module `child` ("attention", "self", …; dotted paths too).
    subscript(_ child: String) -> WeightScope {
        WeightScope(file, name: name.isEmpty ? child : TensorNames.join(name, child), precision: precision)
    }

    /// The same module with its Linear layers in `precision` (heads stay FP32 under BF16).
    func with(_ precision: Precision) -> WeightScope {
        WeightScope(file, name: name, precision: precision)
    }

    /// This module as a Linear layer: `name.weight` [n × k] and `name.bias` [n].
    func linear(k: Int, n: Int) throws -> Linear {
        try Linear(file, name, k: k, n: n, precision: precision)
    }

    /// This module as a LayerNorm of `size` features.
    func layerNorm(size: Int, eps: Float) throws -> LayerNorm {
        try LayerNorm(file, name, size: size, eps: eps)
    }

    /// This module's `.weight` matrix [n × k] as stored (embedding tables, tied decoders).
    func matrix(n: Int, k: Int) throws -> any LinearWeights {
        try loadWeightMatrix(file, name, n: n, k: k)
    }
}
