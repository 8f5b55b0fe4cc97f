// Which kernels this build runs (`KernelReport.current`) is part of the library's API: `bert info`
// and a program that depends on SwiftBERT print it. It is defined with the kernels, and this
// re-exports that one type, not the kernels' other declarations.
@_exported import struct SwiftBERTKernels.KernelReport
