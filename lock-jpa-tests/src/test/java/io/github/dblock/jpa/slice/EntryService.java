package io.github.dblock.jpa.slice;

import io.github.dblock.DistributedLock;
import io.github.dblock.jpa.JpaEntry;
import jakarta.persistence.EntityManager;
import org.springframework.transaction.annotation.Transactional;

/** Code under test: writes an entity with JPA under a lock per resource, in a transaction of its own. */
public class EntryService {

	private final EntityManager entityManager;

	public EntryService(EntityManager entityManager) {
		this.entityManager = entityManager;
	}

	/**
	 * Writes one entry under {@code entry:<resource>}, without waiting for a busy lock, and runs {@code meanwhile}
	 * after the entity is flushed, before the transaction commits (where a test injects a fault).
	 */
	@DistributedLock(resource = "entry:#{#resource}", waitTime = "0")
	@Transactional
	public JpaEntry write(String resource, String writer, Runnable meanwhile) {
		JpaEntry entry = new JpaEntry(resource, writer);
		this.entityManager.persist(entry);
		this.entityManager.flush();
		meanwhile.run();
		return entry;
	}

}
