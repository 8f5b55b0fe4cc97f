import Foundation

/// Limited-memory BFGS (Nocedal and Wright, Numerical Optimization, algorithms 7.4 and 7.5)
/// with a line search satisfying the strong Wolfe conditions (algorithms 3.5 and 3.6, cubic
/// interpolation in the zoom). Stops as scipy's L-BFGS-B does for scikit-learn: when every
/// gradient component is at most `tolerance` (its pgtol), when the relative decrease of the
/// objective falls to `relativeDecrease` (its ftol), or after `maxIterations`.
struct LBFGS {
    /// Pairs (s, y) kept: scipy's default maxcor.
    var memory = 10
    var maxIterations = 2000
    var tolerance = 1e-4
    /// scikit-learn passes 64 machine epsilons.
    var relativeDecrease = 64 * Double.ulpOfOne
    /// Objective evaluations per line search, at most (scikit-learn passes maxls = 50).
    var maxLineSearchEvaluations = 50
    /// Sufficient decrease and curvature constants (scipy's ftol = 1e-3 and gtol = 0.9 are
    /// for its Moré-Thuente search; these are the textbook values for quasi-Newton methods).
    var c1 = 1e-4, c2 = 0.9

    enum Stop: String, Sendable {
        case gradientTolerance = "gradient below tolerance"
        case relativeDecrease = "objective no longer decreasing"
        case maxIterations = "iteration limit"
        case lineSearchFailed = "line search found no decrease"

        /// scipy reports both of its convergence tests as success.
        var isConvergence: Bool { self == .gradientTolerance || self == .relativeDecrease }
    }

    struct Outcome {
        let x: [Double]
        let value: Double
        let iterations: Int
        let evaluations: Int
        let stop: Stop
    }

    /// Minimises `objective` (its value, and its gradient written into the second argument)
    /// from `start`. `iteration` sees each accepted point (its number, value and x).
    func minimize(from start: [Double], _ objective: ([Double], inout [Double]) -> Double,
                  iteration: ((Int, Double, [Double]) -> Void)? = nil) -> Outcome {
        let count = start.count
        var x = start
        var gradient = [Double](repeating: 0, count: count)
        var value = objective(x, &gradient)
        var evaluations = 1
        var s: [[Double]] = [], y: [[Double]] = [], rho: [Double] = []
        var direction = [Double](repeating: 0, count: count)
        var trial = x, trialGradient = gradient
        func finish(_ k: Int, _ stop: Stop) -> Outcome {
            Outcome(x: x, value: value, iterations: k, evaluations: evaluations, stop: stop)
        }
        if maxAbs(gradient) <= tolerance { return finish(0, .gradientTolerance) }

        for k in 1...max(1, maxIterations) {
            // Direction -H·g by the two-loop recursion; H₀ = (sᵀy / yᵀy)·I.
            for i in 0..<count { direction[i] = -gradient[i] }
            var alphas = [Double](repeating: 0, count: s.count)
            for j in s.indices.reversed() {
                alphas[j] = rho[j] * dot(s[j], direction)
                axpy(-alphas[j], y[j], &direction)
            }
            if let lastS = s.last, let lastY = y.last {
                let gamma = dot(lastS, lastY) / dot(lastY, lastY)
                for i in 0..<count { direction[i] *= gamma }
            }
            for j in s.indices {
                let beta = rho[j] * dot(y[j], direction)
                axpy(alphas[j] - beta, s[j], &direction)
            }
            var slope = dot(gradient, direction)
            if !(slope < 0) {
                // Not a descent direction (rounding in the memory): restart from steepest descent.
                s.removeAll(); y.removeAll(); rho.removeAll()
                for i in 0..<count { direction[i] = -gradient[i] }
                slope = dot(gradient, direction)
            }
            // The first step is scaled to length 1, as L-BFGS-B does; then the unit step.
            let initialStep = s.isEmpty ? min(1, 1 / dot(direction, direction).squareRoot()) : 1
            let search = lineSearch(x, value, slope, direction, initialStep, objective, &trial, &trialGradient)
            evaluations += search.evaluations
            guard let newValue = search.value else { return finish(k - 1, .lineSearchFailed) }

            var step = [Double](repeating: 0, count: count), change = [Double](repeating: 0, count: count)
            for i in 0..<count { step[i] = trial[i] - x[i]; change[i] = trialGradient[i] - gradient[i] }
            let curvature = dot(step, change)
            if curvature > Double.ulpOfOne * dot(change, change) {
                if s.count == memory { s.removeFirst(); y.removeFirst(); rho.removeFirst() }
                s.append(step); y.append(change); rho.append(1 / curvature)
            }
            let previous = value
            swap(&x, &trial); swap(&gradient, &trialGradient)
            value = newValue
            iteration?(k, value, x)
            if maxAbs(gradient) <= tolerance { return finish(k, .gradientTolerance) }
            if (previous - value) / max(abs(previous), abs(value), 1) <= relativeDecrease { return finish(k, .relativeDecrease) }
        }
        return finish(maxIterations, .maxIterations)
    }

    /// A step along `direction` meeting the strong Wolfe conditions: f(x + a·d) ≤ f(x) + c1·a·slope
    /// and |∇f(x + a·d)·d| ≤ c2·|slope|. The point and its gradient are left in `point` and
    /// `pointGradient`; value nil when no step decreased f within the evaluation budget.
    private func lineSearch(_ x: [Double], _ value: Double, _ slope: Double, _ direction: [Double], _ initialStep: Double,
                            _ objective: ([Double], inout [Double]) -> Double,
                            _ point: inout [Double], _ pointGradient: inout [Double]) -> (value: Double?, evaluations: Int) {
        var evaluations = 0
        // φ(a) = f(x + a·d) and φ'(a) = ∇f(x + a·d)·d.
        func phi(_ a: Double) -> (value: Double, slope: Double) {
            for i in x.indices { point[i] = x[i] + a * direction[i] }
            evaluations += 1
            let f = objective(point, &pointGradient)
            return (f, dot(pointGradient, direction))
        }
        func sufficientDecrease(_ a: Double, _ f: Double) -> Bool { f <= value + c1 * a * slope }
        func curvatureHolds(_ d: Double) -> Bool { abs(d) <= -c2 * slope }

        // The best point meeting sufficient decrease so far, used if the budget runs out.
        var fallback: (step: Double, value: Double)?
        func remember(_ a: Double, _ f: Double) {
            if sufficientDecrease(a, f), f < fallback?.value ?? .infinity { fallback = (a, f) }
        }

        // Zoom between lo (sufficient decrease, the lower value) and hi.
        func zoom(_ lo: (a: Double, f: Double, d: Double), _ hi: (a: Double, f: Double, d: Double)) -> Double? {
            var lo = lo, hi = hi
            while evaluations < maxLineSearchEvaluations {
                let a = cubicMinimizer(lo, hi)
                let (f, d) = phi(a)
                remember(a, f)
                if !sufficientDecrease(a, f) || f >= lo.f {
                    hi = (a, f, d)
                } else {
                    if curvatureHolds(d) { return f }
                    if d * (hi.a - lo.a) >= 0 { hi = lo }
                    lo = (a, f, d)
                }
                if abs(hi.a - lo.a) <= 1e-14 * max(1, abs(lo.a)) { break }
            }
            return nil
        }

        var previous = (a: 0.0, f: value, d: slope)
        var a = initialStep
        var result: Double?
        while evaluations < maxLineSearchEvaluations {
            let (f, d) = phi(a)
            remember(a, f)
            if !f.isFinite || !sufficientDecrease(a, f) || (evaluations > 1 && f >= previous.f) {
                result = zoom(previous, (a, f, d)); break
            }
            if curvatureHolds(d) { result = f; break }
            if d >= 0 { result = zoom((a, f, d), previous); break }
            previous = (a, f, d)
            a *= 2
        }
        if let result { return (result, evaluations) }
        // Out of budget: accept the best point with sufficient decrease, as a weaker step.
        guard let fallback else { return (nil, evaluations) }
        let (f, _) = phi(fallback.step)
        return (f, evaluations)
    }

    /// The minimiser of the cubic through both ends' values and slopes (Nocedal and Wright,
    /// eq. 3.59), kept at least a tenth of the interval from either end; bisection when the
    /// cubic has none.
    private func cubicMinimizer(_ lo: (a: Double, f: Double, d: Double), _ hi: (a: Double, f: Double, d: Double)) -> Double {
        let d1 = lo.d + hi.d - 3 * (lo.f - hi.f) / (lo.a - hi.a)
        let radicand = d1 * d1 - lo.d * hi.d
        let low = min(lo.a, hi.a), high = max(lo.a, hi.a), margin = 0.1 * (high - low)
        guard radicand >= 0, radicand.isFinite else { return (lo.a + hi.a) / 2 }
        let d2 = (hi.a - lo.a).sign == .minus ? -radicand.squareRoot() : radicand.squareRoot()
        let a = hi.a - (hi.a - lo.a) * (hi.d + d2 - d1) / (hi.d - lo.d + 2 * d2)
        guard a.isFinite else { return (lo.a + hi.a) / 2 }
        return min(max(a, low + margin), high - margin)
    }
}

private func dot(_ a: [Double], _ b: [Double]) -> Double {
    var sum = 0.0
    for i in a.indices { sum += a[i] * b[i] }
    return sum
}

/// y += alpha·x
private func axpy(_ alpha: Double, _ x: [Double], _ y: inout [Double]) {
    for i in x.indices { y[i] += alpha * x[i] }
}

private func maxAbs(_ v: [Double]) -> Double { v.reduce(0) { max($0, abs($1)) } }
