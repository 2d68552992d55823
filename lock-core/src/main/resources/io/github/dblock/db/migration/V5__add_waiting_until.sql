-- waiting_until  set by a LEASE waiter on another node while it waits: the instant (server clock, UTC) by which it
--                will try again. The holder's release reads and clears it in the statement it runs anyway, and the
--                holder's JVM lets its own queued threads hold back only when a waiter announced itself. NULL or
--                past: nobody waits. Added last, so MariaDB 10.3+ and MySQL 8.0.12+ add it instantly.
ALTER TABLE `${lock_table}` ADD COLUMN waiting_until DATETIME(6) NULL;
