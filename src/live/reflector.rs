//! The protocol that keeps one resource current, as a step function over states (as
//! kube-runtime's watcher is): list, watch from the list's version, move the version on
//! with each event and bookmark, watch again from it when the server closes the watch, list
//! again when the version expired (410 Gone) or the watch cannot go on from it, and back off
//! after failures. It does no I/O: the caller reads the API, tells [`Reflector::step`] what
//! happened and does what it answers, so the protocol is tested without a server.

use super::failure::ReadFailure;
use std::time::Duration;

/// The first wait after a failure; it doubles up to [`MAX_BACKOFF`].
pub const FIRST_BACKOFF: Duration = Duration::from_millis(500);
pub const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A watch closed sooner than this after it was opened is watched again only after the
/// backoff.
pub const SHORTEST_WATCH: Duration = Duration::from_secs(1);

/// How often an optional resource found absent (a gang scheduler's CRD not installed, or
/// not readable) is looked for again.
pub const ABSENT_RECHECK: Duration = Duration::from_secs(60);

/// What happened to the last request the caller made.
#[derive(Debug)]
pub enum Input<'a> {
    /// A complete list, at `version`.
    Listed {
        version: String,
    },
    ListFailed(&'a ReadFailure),
    /// The server closed the watch (its timeout), or the connection was cut, after it had
    /// been open for `lasted`.
    WatchClosed {
        lasted: Duration,
    },
    /// The watch's version is too old (410 Gone).
    WatchExpired,
    WatchFailed(&'a ReadFailure),
}

/// What the caller does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// List the resource.
    List,
    /// Watch it from `version`, telling [`Reflector::seen`] each version read.
    Watch { version: String },
}

/// [`Reflector::step`]'s answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub request: Request,
    /// How long to wait before the request.
    pub after: Duration,
    /// The failure is to be reported (the resource cannot be read now).
    pub report: bool,
    /// The resource has just been found absent: it has none of its objects (said once).
    pub none: bool,
}

impl Step {
    fn now(request: Request) -> Step {
        Step {
            request,
            after: Duration::ZERO,
            report: false,
            none: false,
        }
    }
}

/// The state of one resource's list and watch.
#[derive(Debug, Clone)]
pub struct Reflector {
    /// Whether the resource may be absent (404) or unreadable (403) without that being an
    /// error: a gang scheduler's PodGroups.
    optional: bool,
    /// The version the watch reads from; None until a list gave one, and after it expired.
    version: Option<String>,
    /// The next wait after a failure.
    backoff: Duration,
    /// Whether the resource is known absent (said once).
    absent: bool,
}

impl Reflector {
    pub fn new(optional: bool) -> Reflector {
        Reflector {
            optional,
            version: None,
            backoff: FIRST_BACKOFF,
            absent: false,
        }
    }

    /// The first request: a list.
    pub fn start(&self) -> Step {
        Step::now(Request::List)
    }

    /// The wait before the next try after a failure; doubles the one after it.
    fn back_off(&mut self) -> Duration {
        let d = self.backoff;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
        d
    }

    fn watch(&self) -> Request {
        match &self.version {
            Some(version) => Request::Watch {
                version: version.clone(),
            },
            None => Request::List,
        }
    }

    /// An event or a bookmark of the watch: what is known is current up to `version` (an
    /// event without one moves nothing).
    pub fn seen(&mut self, version: String) {
        if !version.is_empty() {
            self.version = Some(version);
        }
    }

    /// Takes what happened in and answers what to do next.
    pub fn step(&mut self, input: Input<'_>) -> Step {
        match input {
            Input::Listed { version } => {
                self.absent = false;
                self.backoff = FIRST_BACKOFF;
                self.version = Some(version);
                Step::now(self.watch())
            }
            Input::ListFailed(ReadFailure::Forbidden { .. } | ReadFailure::NotServed { .. })
                if self.optional =>
            {
                let none = !self.absent;
                self.absent = true;
                self.version = None;
                Step {
                    request: Request::List,
                    after: ABSENT_RECHECK,
                    report: false,
                    none,
                }
            }
            Input::ListFailed(e) => Step {
                request: Request::List,
                after: self.back_off().max(e.retry_after().unwrap_or_default()),
                report: true,
                none: false,
            },
            // A watch that was open a while ended as watches do (the server's timeout, a
            // connection recycled): watch again at once. One closed at once (a proxy or load
            // balancer that ends every watch) is watched again after the backoff, so that it
            // is not asked for in a tight loop.
            Input::WatchClosed { lasted } if lasted >= SHORTEST_WATCH => {
                self.backoff = FIRST_BACKOFF;
                Step::now(self.watch())
            }
            Input::WatchClosed { .. } => Step {
                request: self.watch(),
                after: self.back_off(),
                report: false,
                none: false,
            },
            Input::WatchExpired => {
                self.version = None;
                Step::now(Request::List)
            }
            Input::WatchFailed(e) => {
                // An event that could not be read leaves the state unknown, and a resource
                // gone (a CRD removed) cannot be watched: list again. Anything else (the
                // server unreachable, a refusal) is retried from the same version.
                if matches!(
                    e,
                    ReadFailure::Decode { .. } | ReadFailure::NotServed { .. }
                ) {
                    self.version = None;
                }
                Step {
                    request: self.watch(),
                    after: self.back_off().max(e.retry_after().unwrap_or_default()),
                    report: true,
                    none: false,
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::decode::SnapshotError;
    use crate::snapshot::store::Resource;
    use crate::snapshot::GangKind;

    fn api(code: u16) -> ReadFailure {
        let status = kube::core::Status::failure("no", "").with_code(code);
        ReadFailure::of(
            Resource::PodGroups(GangKind::Volcano),
            kube::Error::Api(status.boxed()),
        )
    }

    fn watch(version: &str) -> Request {
        Request::Watch {
            version: version.into(),
        }
    }

    #[test]
    fn list_then_watch_from_the_version_events_and_bookmarks_moved_on_to() {
        let mut r = Reflector::new(false);
        assert_eq!(r.start(), Step::now(Request::List));
        let s = r.step(Input::Listed {
            version: "10".into(),
        });
        assert_eq!(s, Step::now(watch("10")));
        // An event, then a bookmark: the version moves on; an event without one does not.
        for v in ["11", "15", ""] {
            r.seen(v.into());
        }
        // The server closed the watch: watch again from the last version, at once.
        assert_eq!(
            r.step(Input::WatchClosed {
                lasted: Duration::from_secs(300)
            }),
            Step::now(watch("15"))
        );
    }

    #[test]
    fn an_expired_version_is_listed_again_at_once() {
        let mut r = Reflector::new(false);
        r.step(Input::Listed {
            version: "10".into(),
        });
        assert_eq!(r.step(Input::WatchExpired), Step::now(Request::List));
        let s = r.step(Input::Listed {
            version: "90".into(),
        });
        assert_eq!(s.request, watch("90"));
    }

    #[test]
    fn failures_back_off_doubling_to_a_limit_and_a_success_resets_it() {
        let mut r = Reflector::new(false);
        let unavailable = api(503);
        let waits: Vec<Duration> = (0..9)
            .map(|_| {
                let s = r.step(Input::ListFailed(&unavailable));
                assert_eq!(s.request, Request::List);
                assert!(s.report && !s.none);
                s.after
            })
            .collect();
        let ms: Vec<u128> = waits.iter().map(Duration::as_millis).collect();
        assert_eq!(
            ms,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        r.step(Input::Listed {
            version: "1".into(),
        });
        let s = r.step(Input::WatchFailed(&unavailable));
        assert_eq!(
            (s.request, s.after, s.report),
            (watch("1"), FIRST_BACKOFF, true)
        );
        // A watch closed normally resets the backoff too.
        r.step(Input::WatchClosed {
            lasted: SHORTEST_WATCH,
        });
        assert_eq!(
            r.step(Input::WatchFailed(&unavailable)).after,
            FIRST_BACKOFF
        );
    }

    /// A 429 (or 503) whose answer says when to ask again: not asked sooner, list or watch;
    /// the backoff still doubles, and rules when it is the longer wait.
    #[test]
    fn a_server_that_asks_to_wait_is_not_asked_again_sooner() {
        let asked = |code: u16, seconds: u32| {
            let mut status =
                kube::core::Status::failure("slow down", "TooManyRequests").with_code(code);
            status.details = Some(kube::core::response::StatusDetails {
                name: String::new(),
                group: String::new(),
                kind: String::new(),
                uid: String::new(),
                causes: Vec::new(),
                retry_after_seconds: seconds,
            });
            ReadFailure::of(Resource::Pods, kube::Error::Api(status.boxed()))
        };
        let mut r = Reflector::new(false);
        let s = r.step(Input::ListFailed(&asked(429, 7)));
        assert_eq!(
            (s.request, s.after),
            (Request::List, Duration::from_secs(7))
        );
        // 503 with a wait too; a 500 has none to honour.
        assert_eq!(asked(503, 3).retry_after(), Some(Duration::from_secs(3)));
        assert_eq!(asked(500, 3).retry_after(), None);
        assert_eq!(asked(429, 0).retry_after(), None);
        let s = r.step(Input::Listed {
            version: "5".into(),
        });
        assert_eq!(s, Step::now(watch("5")));
        let s = r.step(Input::WatchFailed(&asked(429, 2)));
        assert_eq!((s.request, s.after), (watch("5"), Duration::from_secs(2)));
        // Backed off past what was asked: the longer wait holds.
        for _ in 0..6 {
            r.step(Input::WatchFailed(&api(500)));
        }
        let s = r.step(Input::WatchFailed(&asked(429, 1)));
        assert!(s.after > Duration::from_secs(1), "{s:?}");
    }

    #[test]
    fn a_watch_closed_at_once_again_and_again_is_watched_again_after_the_backoff() {
        let mut r = Reflector::new(false);
        r.step(Input::Listed {
            version: "7".into(),
        });
        // A load balancer that ends every watch as soon as it opens: no tight loop.
        let waits: Vec<u128> = (0..4)
            .map(|_| {
                let s = r.step(Input::WatchClosed {
                    lasted: Duration::from_millis(20),
                });
                assert_eq!(s.request, watch("7"), "from the same version");
                assert!(!s.report, "a closed watch is no failure to report");
                s.after.as_millis()
            })
            .collect();
        assert_eq!(waits, [500, 1000, 2000, 4000]);
        // A watch that stayed open resets it.
        let s = r.step(Input::WatchClosed {
            lasted: Duration::from_secs(60),
        });
        assert_eq!(s, Step::now(watch("7")));
        assert_eq!(
            r.step(Input::WatchClosed {
                lasted: Duration::ZERO
            })
            .after,
            FIRST_BACKOFF
        );
    }

    #[test]
    fn a_watch_that_cannot_go_on_from_its_version_lists_again_after_the_backoff() {
        let decode = ReadFailure::decode(
            Resource::Pods,
            SnapshotError::Response {
                what: "the pods watch".into(),
                message: "not JSON".into(),
            },
        );
        for failure in [decode, api(404)] {
            let mut r = Reflector::new(false);
            r.step(Input::Listed {
                version: "7".into(),
            });
            let s = r.step(Input::WatchFailed(&failure));
            assert_eq!(
                (s.request, s.after, s.report),
                (Request::List, FIRST_BACKOFF, true)
            );
        }
        // A refusal or a server away is retried from the same version.
        let mut r = Reflector::new(false);
        r.step(Input::Listed {
            version: "7".into(),
        });
        assert_eq!(r.step(Input::WatchFailed(&api(403))).request, watch("7"));
    }

    #[test]
    fn an_optional_resource_absent_or_unreadable_has_none_said_once_and_is_looked_for_again() {
        let mut r = Reflector::new(true);
        for (i, code) in [404, 403, 404].into_iter().enumerate() {
            let s = r.step(Input::ListFailed(&api(code)));
            assert_eq!(
                s,
                Step {
                    request: Request::List,
                    after: ABSENT_RECHECK,
                    report: false,
                    none: i == 0,
                }
            );
        }
        // Installed later: listed and watched; gone again: said again.
        r.step(Input::Listed {
            version: "3".into(),
        });
        assert!(r.step(Input::ListFailed(&api(404))).none);
        // Other failures are failures, optional or not.
        let s = r.step(Input::ListFailed(&api(500)));
        assert!(s.report && !s.none);
        // A required resource refused is a failure reported.
        let mut r = Reflector::new(false);
        let s = r.step(Input::ListFailed(&api(403)));
        assert!(s.report && !s.none);
        assert_eq!(s.after, FIRST_BACKOFF);
    }
}
