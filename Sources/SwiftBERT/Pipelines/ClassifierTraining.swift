import Foundation
import SwiftBERTKernels

/// On-device training of a classification layer on frozen features (the pretrained encoder
/// stays as it is, as in ONNX Runtime's on-device-training tutorial): multinomial logistic
/// regression, logits = W·x + b, trained with cross-entropy by one of two optimisers.
///
/// - **L-BFGS** (the default) minimises scikit-learn's LogisticRegression objective exactly:
///   mean cross-entropy + ‖W‖² / (2·C·n), the bias unpenalised (`SoftmaxRegressionObjective`),
///   in float64, to scipy's stopping rule as scikit-learn sets it (every gradient component at
///   most 1e-4). The objective is strictly convex, so both reach the same optimum. Given
///   several C and a validation set, each C is fitted from zero (as LogisticRegression does;
///   a warm start from the previous C's optimum can already meet the tolerance of the next
///   and stop short of it) and the C with the best validation accuracy kept: validation
///   chooses the regularisation.
/// - **AdamW** on mini-batches, with early stopping on validation: the weights kept are those
///   of the epoch with the best validation accuracy (ties: the lower validation loss).
///   Validation loss alone stopped far too early on the language-identification task (it
///   rises with confidence while accuracy still climbs).
public enum ClassifierTraining {
    public enum Optimizer: String, CaseIterable, Sendable {
        case lbfgs, adamw
    }

    /// Training settings.
    public struct Options: Sendable {
        public var optimizer = Optimizer.lbfgs

        // L-BFGS
        /// scikit-learn's C, the inverse of the L2 strength. Several values: each is fitted
        /// and the one with the best validation accuracy kept (the first on ties).
        public var inverseRegularization: [Double] = [1]
        public var maxIterations = 2000
        /// Stop when every component of the objective's gradient is at most this (scikit-learn's tol).
        public var tolerance = 1e-4
        /// Threads computing the objective (rows split across them).
        public var threads = ProcessInfo.processInfo.activeProcessorCount

        // AdamW
        /// Passes over the training set, at most.
        public var epochs = 300
        public var learningRate: Float = 1e-2
        /// AdamW's decoupled weight decay.
        public var weightDecay: Float = 1e-4
        public var batchSize = 128
        /// Epochs without a better validation accuracy before stopping.
        public var patience = 30
        /// Seed of the batch shuffling.
        public var seed: UInt64 = 0
        public init() {}
    }

    /// One step's figures: an L-BFGS iteration or an AdamW epoch (validation ones when a
    /// validation set is given). Losses are the mean cross-entropy, without the penalty.
    public struct Step: Sendable {
        /// Counted from 1 within one fit.
        public let step: Int
        /// L-BFGS: the C of this fit.
        public let inverseRegularization: Double?
        public let trainLoss: Float
        public let trainAccuracy: Float
        public let validLoss: Float?
        public let validAccuracy: Float?

        /// The figures of one step, from the train and (if any) validation (loss, accuracy).
        init(_ step: Int, inverseRegularization: Double?, train: (loss: Double, accuracy: Float),
             validation: (loss: Double, accuracy: Float)?) {
            (self.step, self.inverseRegularization) = (step, inverseRegularization)
            (trainLoss, trainAccuracy) = (Float(train.loss), train.accuracy)
            (validLoss, validAccuracy) = (validation.map { Float($0.loss) }, validation?.accuracy)
        }
    }

    /// One L-BFGS fit.
    public struct Fit: Sendable {
        public let inverseRegularization: Double
        public let iterations: Int
        public let evaluations: Int
        /// Why it stopped.
        public let stop: String
        /// Stopped by scipy's own convergence tests: the gradient tolerance, or no more decrease.
        public let converged: Bool
        public let seconds: Double
    }

    /// The trained classifier and its history.
    public struct Result: Sendable {
        /// [classes × features], row-major, as PyTorch stores a Linear weight.
        public let weight: [Float]
        public let bias: [Float]
        public let classes: Int
        public let features: Int
        /// Index in `history` of the step whose weights were kept: the end of the chosen fit
        /// (L-BFGS), or the epoch of best validation accuracy, then loss (AdamW; without a
        /// validation set, the lowest training loss).
        public let kept: Int
        /// L-BFGS: the C kept.
        public let inverseRegularization: Double?
        public let history: [Step]
        /// L-BFGS: each C's fit.
        public let fits: [Fit]
        public let seconds: Double

        public func logits(_ x: [Float]) -> [Float] {
            (0..<classes).map { c in
                var sum: Float = 0
                for i in 0..<features { sum += weight[c * features + i] * x[i] }
                return sum + bias[c]
            }
        }
        public func predict(_ x: [Float]) -> Int { argmax(logits(x)) }
    }

    public static func train(features x: [[Float]], labels y: [Int], classes: Int,
                             valid: (features: [[Float]], labels: [Int])? = nil,
                             options: Options = Options(), progress: ((Step) -> Void)? = nil) throws -> Result {
        guard let d = x.first?.count, d > 0, x.count == y.count else {
            throw SwiftBERTError.invalidInput(reason: "no training examples, or features and labels of different counts")
        }
        guard classes >= 2 else { throw SwiftBERTError.invalidInput(reason: "the training set has \(classes) label; a classifier needs at least two") }
        let allRows = x + (valid?.features ?? []), allLabels = y + (valid?.labels ?? [])
        guard allLabels.allSatisfy({ $0 >= 0 && $0 < classes }), allRows.allSatisfy({ $0.count == d }),
              valid.map({ $0.features.count == $0.labels.count }) ?? true else {
            throw SwiftBERTError.invalidInput(reason: "a label or a feature vector is out of shape")
        }
        let threads = max(1, options.threads)
        let trainSet = SoftmaxRegressionObjective(x, y, classes: classes, threads: threads)
        let validSet = valid.map { SoftmaxRegressionObjective($0.features, $0.labels, classes: classes, threads: threads) }
        switch options.optimizer {
        case .lbfgs:
            return try lbfgs(trainSet, validSet, options: options, progress: progress)
        case .adamw:
            return adamW(x, y, trainSet, validSet, options: options, progress: progress)
        }
    }

    static func seconds(since start: DispatchTime) -> Double {
        Double(DispatchTime.now().uptimeNanoseconds - start.uptimeNanoseconds) / 1e9
    }

    /// scikit-learn's fit for each C, in ascending order; the best on validation kept.
    static func lbfgs(_ train: SoftmaxRegressionObjective, _ valid: SoftmaxRegressionObjective?,
                      options: Options, progress: ((Step) -> Void)?) throws -> Result {
        let start = DispatchTime.now()
        let values = options.inverseRegularization.sorted()
        guard !values.isEmpty, values.allSatisfy({ $0 > 0 && $0.isFinite }) else {
            throw SwiftBERTError.invalidInput(reason: "C (the inverse regularisation) must be positive; give one or more values")
        }
        guard values.count == 1 || valid != nil else {
            throw SwiftBERTError.invalidInput(reason: "several values of C are chosen between on a validation set; give one, or a validation set")
        }
        let solver = LBFGS(maxIterations: options.maxIterations, tolerance: options.tolerance)
        var history: [Step] = [], fits: [Fit] = []
        var best: (accuracy: Float, theta: [Double], kept: Int, c: Double)?
        for c in values {
            let fitStart = DispatchTime.now()
            train.inverseRegularization = c
            let zero = [Double](repeating: 0, count: train.parameterCount)
            let outcome = solver.minimize(from: zero, { train($0, &$1) }) { k, _, point in
                // The solver's last evaluation was at `point`: its loss and accuracy are the train figures.
                let validation = valid?.evaluate(point)
                let step = Step(k, inverseRegularization: c, train: (train.lastLoss, train.lastAccuracy), validation: validation)
                history.append(step)
                progress?(step)
            }
            let theta = outcome.x
            fits.append(Fit(inverseRegularization: c, iterations: outcome.iterations, evaluations: outcome.evaluations,
                            stop: outcome.stop.rawValue, converged: outcome.stop.isConvergence,
                            seconds: seconds(since: fitStart)))
            let accuracy = valid?.evaluate(theta).accuracy ?? 0
            if best == nil || accuracy > best!.accuracy {
                best = (accuracy, theta, max(history.count - 1, 0), c)
            }
        }
        if history.isEmpty {
            // Converged at the start (a zero gradient): one record of where it stands.
            let t = train.evaluate(best!.theta), v = valid?.evaluate(best!.theta)
            history.append(Step(0, inverseRegularization: values[0], train: t, validation: v))
        }
        let (weight, bias) = train.split(best!.theta)
        return Result(weight: weight, bias: bias, classes: train.classes, features: train.d, kept: best!.kept,
                      inverseRegularization: best!.c, history: history, fits: fits, seconds: seconds(since: start))
    }

    /// Mini-batch AdamW, the epoch of best validation accuracy kept.
    static func adamW(_ x: [[Float]], _ y: [Int], _ train: SoftmaxRegressionObjective, _ valid: SoftmaxRegressionObjective?,
                      options: Options, progress: ((Step) -> Void)?) -> Result {
        let start = DispatchTime.now()
        let classes = train.classes, d = train.d
        var w = [Float](repeating: 0, count: classes * d), b = [Float](repeating: 0, count: classes)
        // Adam's moments.
        var mw = w, vw = w, mb = b, vb = b
        let beta1: Float = 0.9, beta2: Float = 0.999, eps: Float = 1e-8
        var step = 0
        var order = Array(x.indices)
        var random = SplitMix64(seed: options.seed)
        var best = (accuracy: -Float.infinity, loss: Float.infinity, kept: 0, w: w, b: b)
        var history: [Step] = []
        var gw = [Float](repeating: 0, count: classes * d), gb = [Float](repeating: 0, count: classes)
        let layer = { (w: [Float], b: [Float]) in Result(weight: w, bias: b, classes: classes, features: d, kept: 0,
                                                        inverseRegularization: nil, history: [], fits: [], seconds: 0) }
        for epoch in 1...max(1, options.epochs) {
            // Fisher-Yates with a seeded generator: the same run gives the same weights.
            for i in stride(from: order.count - 1, to: 0, by: -1) { order.swapAt(i, Int(random.next() % UInt64(i + 1))) }
            for batchStart in stride(from: 0, to: order.count, by: max(1, options.batchSize)) {
                let batch = order[batchStart..<min(batchStart + max(1, options.batchSize), order.count)]
                for i in gw.indices { gw[i] = 0 }
                for i in gb.indices { gb[i] = 0 }
                let scale = 1 / Float(batch.count)
                let current = layer(w, b)
                for n in batch {
                    // d(loss)/d(logits) = softmax - onehot.
                    var p = softmax(current.logits(x[n]))
                    p[y[n]] -= 1
                    let row = x[n]
                    for c in 0..<classes where p[c] != 0 {
                        let g = p[c] * scale
                        gb[c] += g
                        let base = c * d
                        for i in 0..<d { gw[base + i] += g * row[i] }
                    }
                }
                step += 1
                let correction1 = 1 - Foundation.pow(beta1, Float(step)), correction2 = 1 - Foundation.pow(beta2, Float(step))
                let lr = options.learningRate
                for i in w.indices {
                    mw[i] = beta1 * mw[i] + (1 - beta1) * gw[i]
                    vw[i] = beta2 * vw[i] + (1 - beta2) * gw[i] * gw[i]
                    w[i] -= lr * options.weightDecay * w[i]
                    w[i] -= lr * (mw[i] / correction1) / ((vw[i] / correction2).squareRoot() + eps)
                }
                for c in b.indices {
                    mb[c] = beta1 * mb[c] + (1 - beta1) * gb[c]
                    vb[c] = beta2 * vb[c] + (1 - beta2) * gb[c] * gb[c]
                    b[c] -= lr * (mb[c] / correction1) / ((vb[c] / correction2).squareRoot() + eps)
                }
            }
            let theta = (w + b).map(Double.init)
            let trainFigures = train.evaluate(theta)
            let validation = valid?.evaluate(theta)
            let record = Step(epoch, inverseRegularization: nil, train: trainFigures, validation: validation)
            history.append(record)
            progress?(record)
            let watched = validation.map { (loss: Float($0.loss), accuracy: $0.accuracy) } ?? (loss: Float(trainFigures.loss), accuracy: 0)
            if watched.accuracy > best.accuracy || (watched.accuracy == best.accuracy && watched.loss < best.loss) {
                best = (watched.accuracy, watched.loss, history.count - 1, w, b)
            }
            if valid != nil, history.count - 1 - best.kept >= options.patience { break }
        }
        return Result(weight: best.w, bias: best.b, classes: classes, features: d, kept: best.kept,
                      inverseRegularization: nil, history: history, fits: [], seconds: seconds(since: start))
    }
}

/// scikit-learn's LogisticRegression objective on one data set (multinomial, L2 penalty, the
/// intercept unpenalised; `_logistic.py` with `LinearModelLoss`), in float64:
///     f(W, b) = (1/n) Σᵢ [logsumexp(zᵢ) − zᵢ[yᵢ]] + ‖W‖² / (2·C·n),   zᵢ = W·xᵢ + b,
/// and its gradient (1/n) Σᵢ (softmax(zᵢ) − onehot(yᵢ)) ⊗ [xᵢ, 1] + [W / (C·n), 0].
/// Parameters θ are W [classes × d] row-major, then b [classes]. Rows are split across threads;
/// each block's two products are OpenBLAS dgemm calls.
final class SoftmaxRegressionObjective {
    let x: [Double]
    let labels: [Int]
    let n: Int, d: Int, classes: Int
    /// C; the penalty is ‖W‖² / (2·C·n).
    var inverseRegularization = 1.0
    /// Mean cross-entropy and accuracy at the last point evaluated.
    private(set) var lastLoss = 0.0, lastAccuracy: Float = 0
    private let blocks: [Range<Int>]
    private let threads: Int
    /// Per block (at the block's first row): logits, then softmax − onehot [rows × classes].
    private let residuals: UnsafeMutablePointer<Double>
    /// Per block: its summed gradient [classes × (d + 1)], laid out as θ.
    private let gradients: [UnsafeMutablePointer<Double>]

    init(_ features: [[Float]], _ labels: [Int], classes: Int, threads: Int) {
        (n, d, self.classes, self.labels, self.threads) = (features.count, features.first?.count ?? 0, classes, labels, threads)
        var x = [Double](repeating: 0, count: n * d)
        for (r, row) in features.enumerated() { for c in 0..<d { x[r * d + c] = Double(row[c]) } }
        self.x = x
        blocks = splitRange(n, parts: threads, align: 64)
        residuals = .allocate(capacity: max(n, 1) * classes)
        gradients = blocks.map { _ in .allocate(capacity: classes * (features.first?.count ?? 0) + classes) }
        useSingleThreadedBLAS()  // the blocks are the threads
    }

    deinit {
        residuals.deallocate()
        gradients.forEach { $0.deallocate() }
    }

    var parameterCount: Int { classes * (d + 1) }

    /// f(θ), with its gradient written into `gradient`.
    func callAsFunction(_ theta: [Double], _ gradient: inout [Double]) -> Double {
        let (loss, correct) = forward(theta, withGradient: true)
        (lastLoss, lastAccuracy) = (loss / Double(n), Float(correct) / Float(max(n, 1)))
        let penalty = 1 / (inverseRegularization * Double(n))
        var squares = 0.0
        let weights = classes * d
        for i in 0..<parameterCount {
            var sum = 0.0
            for block in gradients { sum += block[i] }
            gradient[i] = sum / Double(n)
            if i < weights { gradient[i] += penalty * theta[i]; squares += theta[i] * theta[i] }
        }
        return lastLoss + 0.5 * penalty * squares
    }

    /// Mean cross-entropy (no penalty) and accuracy at θ.
    func evaluate(_ theta: [Double]) -> (loss: Double, accuracy: Float) {
        let (loss, correct) = forward(theta, withGradient: false)
        return (loss / Double(max(n, 1)), Float(correct) / Float(max(n, 1)))
    }

    /// Summed cross-entropy and number of correct predictions; with `withGradient`, each
    /// block's summed gradient is left in `gradients`.
    private func forward(_ theta: [Double], withGradient: Bool) -> (loss: Double, correct: Int) {
        let (d, classes, blocks, gradients, labels) = (self.d, self.classes, self.blocks, self.gradients, self.labels)
        let losses = UnsafeMutableBufferPointer<Double>.allocate(capacity: blocks.count)
        let corrects = UnsafeMutableBufferPointer<Int>.allocate(capacity: blocks.count)
        defer { losses.deallocate(); corrects.deallocate() }
        theta.withUnsafeBufferPointer { theta in
            x.withUnsafeBufferPointer { x in
                let w = theta.baseAddress!, b = w + classes * d
                parallelFor(blocks.count, threads: threads) { block, _ in
                    let rows = blocks[block]
                    let z = residuals + rows.lowerBound * classes, xBlock = x.baseAddress! + rows.lowerBound * d
                    // Logits of the block's rows: X·Wᵀ, then + b.
                    matmulDouble(xBlock, lda: d, w, transposeB: true, ldb: d, z, ldc: classes, m: rows.count, n: classes, k: d)
                    var loss = 0.0, correct = 0
                    for r in 0..<rows.count {
                        let row = z + r * classes, label = labels[rows.lowerBound + r]
                        var top = -Double.infinity, best = 0
                        for c in 0..<classes {
                            row[c] += b[c]
                            if row[c] > top { top = row[c]; best = c }
                        }
                        // Cross-entropy logsumexp(z) − z[label], the exponentials kept for the softmax.
                        let labelLogit = row[label]
                        var sum = 0.0
                        for c in 0..<classes { row[c] = Foundation.exp(row[c] - top); sum += row[c] }
                        loss += top + Foundation.log(sum) - labelLogit
                        if best == label { correct += 1 }
                        // d(loss)/d(logits) = softmax − onehot.
                        let inverse = 1 / sum
                        for c in 0..<classes { row[c] *= inverse }
                        row[label] -= 1
                    }
                    (losses[block], corrects[block]) = (loss, correct)
                    guard withGradient else { return }
                    // W's gradient: (softmax − onehot)ᵀ·X; b's: the column sums.
                    let g = gradients[block]
                    matmulDouble(z, transposeA: true, lda: classes, xBlock, ldb: d, g, ldc: d, m: classes, n: d, k: rows.count)
                    for c in 0..<classes {
                        var sum = 0.0
                        for r in 0..<rows.count { sum += z[r * classes + c] }
                        g[classes * d + c] = sum
                    }
                }
            }
        }
        return (losses.reduce(0, +), corrects.reduce(0, +))
    }

    /// θ as a Linear layer's float32 weight [classes × d] and bias.
    func split(_ theta: [Double]) -> (weight: [Float], bias: [Float]) {
        (theta[..<(classes * d)].map { Float($0) }, theta[(classes * d)...].map { Float($0) })
    }
}

/// A small, fast, seedable generator (Steele, Lea and Flood's SplitMix64).
struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}
