/// Waits, by yielding (never sleeping), until `condition` holds; `false` if it never does.
func eventually(_ condition: () async -> Bool) async -> Bool {
    for _ in 0..<10_000 {
        if await condition() { return true }
        await Task.yield()
    }
    return await condition()
}
