package io.github.dblock.jpa;

import jakarta.persistence.Entity;
import jakarta.persistence.GeneratedValue;
import jakarta.persistence.GenerationType;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A row that a JPA transaction writes under a lock, in {@code jpa_commit_check}. */
@Entity
@Table(name = "jpa_commit_check")
public class JpaEntry {

	@Id
	@GeneratedValue(strategy = GenerationType.IDENTITY)
	private Long id;

	private String resource;

	private String writer;

	protected JpaEntry() {
	}

	public JpaEntry(String resource, String writer) {
		this.resource = resource;
		this.writer = writer;
	}

	public Long getId() {
		return this.id;
	}

	public String getResource() {
		return this.resource;
	}

	public String getWriter() {
		return this.writer;
	}

}
