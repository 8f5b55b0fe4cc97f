/// The order in which the packed-panel kernels (FP32, INT8, INT8 weight-only) cover
/// y[0..<m, columns]: blocks of panels of about 512 KiB of packed weights (half a Zen L2)
/// outermost, so a block stays cached while every row tile runs across it; then row tiles of
/// `tileRows`; then the block's panels. `body` gets the first row, the tile's row count, the
/// panel, and the part of `columns` inside that panel (relative to the panel's first column).
@inline(__always)
func forEachPanelTile(rows m: Int, tileRows: Int, columns: Range<Int>, panelWidth: Int, panelBytes: Int,
                      _ body: (_ row: Int, _ rows: Int, _ panel: Int, _ inPanel: Range<Int>) -> Void) {
    let panels = (columns.lowerBound / panelWidth)..<((columns.upperBound + panelWidth - 1) / panelWidth)
    let perBlock = max(1, (512 * 1024) / panelBytes)
    for blockStart in stride(from: panels.lowerBound, to: panels.upperBound, by: perBlock) {
        var row = 0
        while row < m {
            let rows = min(tileRows, m - row)
            for panel in blockStart..<min(blockStart + perBlock, panels.upperBound) {
                let first = panel * panelWidth
                body(row, rows, panel, (max(columns.lowerBound, first) - first)..<(min(columns.upperBound, first + panelWidth) - first))
            }
            row += rows
        }
    }
}
