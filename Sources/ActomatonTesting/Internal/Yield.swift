/// Lets other tasks run for a while: effects that were just started or woken get to their next
/// suspension point (a sleep on the clock, an action sent back) before the test goes on.
///
/// It yields rather than waits on other tasks: a yield puts this task at the back of the queue
/// its effects were started in (they share its priority), so every job already waiting there,
/// such as an effect's first step, runs before it resumes.
func settle(rounds: Int = 50, isolation: isolated (any Actor)? = #isolation) async {
    for _ in 0..<rounds {
        await Task.yield()
    }
}

/// Yields until `isDone` holds or `timeout` of real time has passed; returns whether it holds.
///
/// Waiting is by yielding, never sleeping: the timeout only bounds how long a test that is
/// going to fail keeps trying.
func waitUntil(
    timeout: Duration,
    isolation: isolated (any Actor)? = #isolation,
    _ isDone: () -> Bool
) async -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now.advanced(by: timeout)
    while !isDone() {
        if clock.now >= deadline { return false }
        await Task.yield()
    }
    return true
}
