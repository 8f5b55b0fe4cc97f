import SwiftBERT
print("benchmarks: under construction")
