#if Server  // the package trait (Package.swift); without it this target is empty
import Foundation
import Metrics
import Prometheus

/// The server's metrics, recorded through swift-metrics and exported by swift-prometheus as the
/// Prometheus text format on GET /metrics. Names start with `swiftbert_`.
final class ServerMetrics: Sendable {
    let registry: PrometheusCollectorRegistry

    /// Bootstraps the process-wide MetricsSystem (once per process, as swift-metrics requires).
    static func bootstrap() -> ServerMetrics {
        let registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500),
            .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
        ]
        factory.valueHistogramBuckets = [
            "swiftbert_batch_sequences": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
            "swiftbert_batch_tokens": [16, 64, 256, 512, 1024, 2048, 4096, 8192, 16384],
        ]
        MetricsSystem.bootstrap(factory)
        return ServerMetrics(registry: registry)
    }

    private init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    /// One answered request: its route (the pattern, not the raw path), status and latency.
    func request(route: String, method: String, status: Int, duration: Duration) {
        Counter(label: "swiftbert_http_requests_total",
                dimensions: [("route", route), ("method", method), ("status", String(status))]).increment()
        Metrics.Timer(label: "swiftbert_http_request_duration_seconds", dimensions: [("route", route)])
            .recordNanoseconds(nanoseconds(duration))
    }

    /// One forward pass of the batcher: how many sequences and tokens it held.
    func batch(model: String, sequences: Int, tokens: Int) {
        Recorder(label: "swiftbert_batch_sequences", dimensions: [("model", model)]).record(sequences)
        Recorder(label: "swiftbert_batch_tokens", dimensions: [("model", model)]).record(tokens)
        Counter(label: "swiftbert_tokens_total", dimensions: [("model", model)]).increment(by: tokens)
        Counter(label: "swiftbert_sequences_total", dimensions: [("model", model)]).increment(by: sequences)
    }

    func forwardSeconds(model: String, _ duration: Duration) {
        Metrics.Timer(label: "swiftbert_forward_duration_seconds", dimensions: [("model", model)])
            .recordNanoseconds(nanoseconds(duration))
    }

    /// Sequences waiting in a model's batching queue.
    func queueDepth(model: String, _ depth: Int) {
        Gauge(label: "swiftbert_queue_depth", dimensions: [("model", model)]).record(depth)
    }

    /// Requests waiting for a lane (`Endpoints.offload`) to decode and tokenise them, by the
    /// lanes their body's size picks ("small" or "large"): work queued before the batcher's.
    /// Static: the lanes are the process's, made before any server's metrics.
    static func requestsWaitingForALane(lanes: String, _ count: Int) {
        Gauge(label: "swiftbert_lane_requests_waiting", dimensions: [("lanes", lanes)]).record(count)
    }

    /// Requests refused because the queue was full.
    func rejected(model: String) {
        Counter(label: "swiftbert_rejected_total", dimensions: [("model", model)]).increment()
    }

    func prometheusText() -> [UInt8] {
        registry.emitToBuffer()
    }

    private func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
#endif
