//! The replay cache's shard lock (and the replay table's): `std::sync::Mutex`
//! with std, a `RefCell` without it.
//!
//! Without std there are no threads to share a cache between, so a shard
//! needs no lock, only interior mutability; [`NonceCache`] and
//! [`ReplayTable`] are then `!Sync` (a driver without std runs one thread).
//! A shard is never borrowed twice at once: every borrow ends inside the
//! method that takes it, and no method calls back into the cache while
//! holding one. The replay table's lock is taken before a window's shard
//! lock, never after, and never while one is held.
//!
//! [`NonceCache`]: crate::nonce_cache::NonceCache
//! [`ReplayTable`]: crate::replay_table::ReplayTable

#[cfg(feature = "std")]
mod imp {
    use std::sync::{Mutex, MutexGuard, PoisonError};

    #[derive(Debug, Default)]
    pub(crate) struct Lock<T>(Mutex<T>);

    impl<T> Lock<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(Mutex::new(value))
        }

        /// A poisoned lock only means another thread panicked while holding
        /// it; a shard's invariants hold between its statements that can
        /// panic (none on input), so keep using it.
        pub(crate) fn lock(&self) -> MutexGuard<'_, T> {
            self.0.lock().unwrap_or_else(PoisonError::into_inner)
        }
    }
}

#[cfg(not(feature = "std"))]
mod imp {
    use core::cell::{RefCell, RefMut};

    #[derive(Debug, Default)]
    pub(crate) struct Lock<T>(RefCell<T>);

    impl<T> Lock<T> {
        pub(crate) const fn new(value: T) -> Self {
            Self(RefCell::new(value))
        }

        #[allow(clippy::panic)] // unreachable: see the module docs
        pub(crate) fn lock(&self) -> RefMut<'_, T> {
            self.0.borrow_mut()
        }
    }
}

pub(crate) use imp::Lock;
