import CCurl
import Foundation

/// The loop thread as a task executor: tasks that prefer it (`withTaskExecutorPreference`) run
/// between the loop's steps, so a transfer's completion resumes its task on the same thread,
/// without a hand-off to another thread (a futex wake and two context switches per item).
/// Once the loop has stopped, their jobs go to the global concurrent executor.
extension CurlEngine: TaskExecutor {
    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        if isLoopThread {
            localJobs.append(job)
            return
        }
        let forward = inbox.withLock { inbox -> Bool in
            guard !inbox.stopped else { return true }
            inbox.jobs.append(job)
            inbox.wake(events)
            return false
        }
        if forward { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    var isLoopThread: Bool { loopThread.load(ordering: .acquiring) == pthread_self() }

    func runJobs(_ jobs: [UnownedJob]) {
        let executor = asUnownedTaskExecutor()
        for job in jobs { job.runSynchronously(on: executor) }
    }
}
