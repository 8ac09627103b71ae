//! Shutdown and leadership as values that are awaited, not flags polled: each is a
//! `tokio::sync::watch` channel, so a wait ends the moment it changes.

use std::sync::Arc;
use tokio::sync::watch;

/// A cancellation token: cancelled once (SIGTERM, the run ending), seen by every clone at
/// once.
#[derive(Clone, Debug)]
pub struct Cancel(Arc<watch::Sender<bool>>);

impl Default for Cancel {
    fn default() -> Self {
        Cancel(Arc::new(watch::channel(false).0))
    }
}

impl Cancel {
    pub fn new() -> Self {
        Cancel::default()
    }

    /// Cancels: every wait on [`Cancel::cancelled`] ends.
    pub fn cancel(&self) {
        self.0.send_replace(true);
    }

    pub fn is_cancelled(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once cancelled (at once if it is).
    pub async fn cancelled(&self) {
        // The token holds the sender: the channel cannot close under the wait.
        let _ = self.0.subscribe().wait_for(|c| *c).await;
    }
}

/// Whether this instance leads, as the leader election sends it on its channel; a value no
/// one can change any more (the election ended, or there is none) is final.
#[derive(Clone, Debug)]
pub struct Leadership(watch::Receiver<bool>);

impl Leadership {
    /// What `election` sends.
    pub fn of(election: &watch::Sender<bool>) -> Leadership {
        Leadership(election.subscribe())
    }

    /// Leading for good: no election.
    pub fn always() -> Leadership {
        Leadership(watch::channel(true).1)
    }

    pub fn is_leading(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves once this instance leads; never, when it no longer can.
    pub async fn gained(&self) {
        self.until(true).await
    }

    /// Resolves once this instance does not lead (at once if it does not); never, when it
    /// leads for good.
    pub async fn lost(&self) {
        self.until(false).await
    }

    async fn until(&self, leading: bool) {
        let mut rx = self.0.clone();
        if rx.wait_for(|l| *l == leading).await.is_err() {
            // The value is final and not `leading`.
            std::future::pending::<()>().await;
        }
    }
}

/// Whether evictions may go on: closed on shutdown or when leadership is lost.
#[derive(Clone, Debug)]
pub struct Gate {
    shutdown: Cancel,
    leading: Leadership,
}

impl Default for Gate {
    /// Open until cancelled by no one: no shutdown, leading for good.
    fn default() -> Self {
        Gate::new(Cancel::new(), Leadership::always())
    }
}

impl Gate {
    pub fn new(shutdown: Cancel, leading: Leadership) -> Self {
        Gate { shutdown, leading }
    }
    pub fn open(&self) -> bool {
        !self.shutdown.is_cancelled() && self.leading.is_leading()
    }
    pub fn shutting_down(&self) -> bool {
        self.shutdown.is_cancelled()
    }
    /// Resolves once the gate is closed (at once if it is).
    pub async fn closed(&self) {
        tokio::select! {
            _ = self.shutdown.cancelled() => {}
            _ = self.leading.lost() => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_wait_ends_when_the_token_is_cancelled_not_on_a_poll() {
        let token = Cancel::new();
        assert!(!token.is_cancelled());
        let waiting = tokio::spawn({
            let token = token.clone();
            async move { token.cancelled().await }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        token.cancel();
        tokio::time::timeout(Duration::from_secs(5), waiting)
            .await
            .expect("the wait ended")
            .unwrap();
        assert!(token.is_cancelled());
        // Once cancelled, a new wait ends at once.
        token.cancelled().await;
    }

    #[tokio::test]
    async fn leadership_is_awaited_both_ways_and_a_final_value_never_changes() {
        let tx = watch::channel(false).0;
        let leading = Leadership::of(&tx);
        assert!(!leading.is_leading());
        leading.lost().await;
        let gained = tokio::spawn({
            let leading = leading.clone();
            async move { leading.gained().await }
        });
        tx.send_replace(true);
        gained.await.unwrap();
        assert!(leading.is_leading());
        tx.send_replace(false);
        leading.lost().await;
        drop(tx);
        // The election ended without this instance leading: it never will.
        let never = tokio::time::timeout(Duration::from_millis(50), leading.gained()).await;
        assert!(never.is_err());

        let always = Leadership::always();
        assert!(always.is_leading());
        always.gained().await;
        let never = tokio::time::timeout(Duration::from_millis(50), always.lost()).await;
        assert!(never.is_err());
    }
}
