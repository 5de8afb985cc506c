! fortran_test.f90 - the MPI layer from Fortran (use mpi; Open MPI's mpif.h
! binds the same symbols): blocking and nonblocking collectives, MPI_IN_PLACE,
! Fortran datatypes, completion calls.  Prints "ok NAME" / "FAIL NAME" on
! rank 0 and "fortran_test: N failed"; stops with status 1 on a failure.
program fortran_test
  use mpi
  implicit none
  integer :: ierr, rank, nproc, i, fails, req, reqs(3), flag, idx, x, y
  integer :: ia(8), ib(64)
  double precision :: da(8), db(8)
  real :: ra(4), rb(4)
  integer :: status(MPI_STATUS_SIZE), statuses(MPI_STATUS_SIZE, 3)
  logical :: done

  fails = 0
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nproc, ierr)

  do i = 1, 8
    ia(i) = rank + i
  end do
  call MPI_Allreduce(ia, ib, 8, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check('allreduce integer sum', all(ib(1:8) == [(nproc*(nproc-1)/2 + nproc*i, i = 1, 8)]))

  da = [(dble(rank * i), i = 1, 8)]
  call MPI_Allreduce(MPI_IN_PLACE, da, 8, MPI_DOUBLE_PRECISION, MPI_MAX, MPI_COMM_WORLD, ierr)
  call check('allreduce double precision max in-place', all(da == [(dble((nproc-1) * i), i = 1, 8)]))

  ra = real(rank + 1)
  call MPI_Reduce(ra, rb, 4, MPI_REAL, MPI_PROD, 0, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call check('reduce real prod', all(rb == real(product([(i, i = 1, nproc)]))))
  else
    call check('reduce real prod', .true.)
  end if

  da = 0d0
  if (rank == 0) da = [(dble(i) / 4d0, i = 1, 8)]
  call MPI_Bcast(da, 8, MPI_REAL8, 0, MPI_COMM_WORLD, ierr)
  call check('bcast real8', all(da == [(dble(i) / 4d0, i = 1, 8)]))

  ia(1:2) = [rank, -rank]
  call MPI_Allgather(ia, 2, MPI_INTEGER, ib, 2, MPI_INTEGER, MPI_COMM_WORLD, ierr)
  call check('allgather integer', all(ib(1:2*nproc:2) == [(i, i = 0, nproc-1)]) .and. &
             all(ib(2:2*nproc:2) == [(-i, i = 0, nproc-1)]))

  ib(1:2*nproc) = 1
  call MPI_Reduce_scatter_block(MPI_IN_PLACE, ib, 2, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  call check('reduce_scatter_block in-place', all(ib(1:2) == nproc))

  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call check('barrier', ierr == MPI_SUCCESS)

  ia(1:4) = rank
  call MPI_Iallreduce(ia, ib, 4, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, req, ierr)
  call MPI_Wait(req, status, ierr)
  call check('iallreduce + wait', all(ib(1:4) == nproc*(nproc-1)/2) .and. req == MPI_REQUEST_NULL)

  ia(1:4) = -1
  if (rank == 0) ia(1:4) = 7
  x = rank
  y = -1
  call MPI_Irecv(y, 1, MPI_INTEGER, 0, 5, MPI_COMM_SELF, reqs(1), ierr)
  call MPI_Ibcast(ia, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Isend(x, 1, MPI_INTEGER, 0, 5, MPI_COMM_SELF, reqs(3), ierr)
  call MPI_Waitall(3, reqs, statuses, ierr)
  call check('ibcast + waitall mixed with isend/irecv', all(ia(1:4) == 7) .and. y == rank)

  call MPI_Ibarrier(MPI_COMM_WORLD, req, ierr)
  done = .false.
  do while (.not. done)
    call MPI_Test(req, done, status, ierr)
  end do
  call check('ibarrier + test', done)

  ia(1:2) = rank
  call MPI_Ireduce(ia, ib, 2, MPI_INTEGER, MPI_MAX, 0, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Iallgather(ia, 1, MPI_INTEGER, ib(10), 1, MPI_INTEGER, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitany(2, reqs, idx, status, ierr)
  call MPI_Waitany(2, reqs, idx, status, ierr)
  call check('ireduce + iallgather + waitany', all(ib(10:9+nproc) == [(i, i = 0, nproc-1)]) .and. &
             (rank /= 0 .or. all(ib(1:2) == nproc - 1)))

  if (rank == 0) print '(a,i0,a)', 'fortran_test: ', fails, ' failed'
  call MPI_Finalize(ierr)
  if (fails /= 0) stop 1

contains
  subroutine check(name, ok)
    character(*), intent(in) :: name
    logical, intent(in) :: ok
    integer :: mine, all_ok, e
    mine = merge(1, 0, ok)
    call MPI_Allreduce(mine, all_ok, 1, MPI_INTEGER, MPI_MIN, MPI_COMM_WORLD, e)
    if (all_ok == 0) fails = fails + 1
    if (rank == 0) then
      if (all_ok == 1) then
        print '(2a)', 'ok ', name
      else
        print '(2a)', 'FAIL ', name
      end if
    end if
  end subroutine check
end program fortran_test
