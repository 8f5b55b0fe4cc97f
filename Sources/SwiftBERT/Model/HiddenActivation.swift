import SwiftBERTKernels

/// config.hidden_act where the engine runs more than BERT's exact GELU: MobileBERT is trained
/// with ReLU (its feed-forward networks and masked-LM transform).
enum HiddenActivation {
    case gelu, relu

    init(_ config: EncoderConfig) { self = config.hiddenAct == "relu" ? .relu : .gelu }

    func callAsFunction(_ x: UnsafeMutablePointer<Float>, count: Int) {
        switch self {
        case .gelu: SwiftBERTKernels.gelu(x, count: count)
        case .relu: SwiftBERTKernels.relu(x, count: count)
        }
    }
}
